// Package eventbusv1 is Salesforce's Pub/Sub API (service eventbus.v1.PubSub)
// compiled from pubsub_api.proto as published in forcedotcom/pub-sub-api
// (commit 0ba47011, CC0 1.0 Universal), kept here unchanged.
//
// Regenerate with protoc (3.21), protoc-gen-go v1.36.12 and
// protoc-gen-go-grpc v1.6.2 on PATH: go generate ./internal/pull/salesforce/pubsub/eventbusv1
package eventbusv1

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go_opt=Mpubsub_api.proto=github.com/tidemark/tidemark/internal/pull/salesforce/pubsub/eventbusv1;eventbusv1 --go-grpc_out=. --go-grpc_opt=paths=source_relative --go-grpc_opt=Mpubsub_api.proto=github.com/tidemark/tidemark/internal/pull/salesforce/pubsub/eventbusv1;eventbusv1 pubsub_api.proto
