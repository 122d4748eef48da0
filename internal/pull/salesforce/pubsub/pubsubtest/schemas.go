package pubsubtest

// The change event schemas the fake serves, shaped as GetSchema answers
// for an org (Pub/Sub API Developer Guide, "Event Data Serialization with
// Apache Avro"; Change Data Capture Developer Guide, "Change Event Message
// Structure" and "ChangeEventHeader Fields"): the record
// <Entity>ChangeEvent in namespace com.sforce.eventbus, the
// ChangeEventHeader first, then every field of the object as a union with
// null whose doc names its Salesforce type ("Data:DateTime" is
// milliseconds since 1970, "Data:Date" days), compound fields (Name,
// addresses) as nested records.

// header is ChangeEventHeader as the guide lists its fields, in its order.
const header = `{"name": "ChangeEventHeader", "type": {"type": "record", "name": "ChangeEventHeader", "fields": [
  {"name": "entityName", "type": "string"},
  {"name": "recordIds", "type": {"type": "array", "items": "string"}},
  {"name": "changeType", "type": {"type": "enum", "name": "ChangeType", "symbols": ["CREATE", "UPDATE", "DELETE", "UNDELETE", "GAP_CREATE", "GAP_UPDATE", "GAP_DELETE", "GAP_UNDELETE", "GAP_OVERFLOW", "SNAPSHOT"]}},
  {"name": "changeOrigin", "type": "string"},
  {"name": "transactionKey", "type": "string"},
  {"name": "sequenceNumber", "type": "int"},
  {"name": "commitTimestamp", "type": "long"},
  {"name": "commitNumber", "type": "long"},
  {"name": "commitUser", "type": "string"},
  {"name": "nulledFields", "type": {"type": "array", "items": "string"}},
  {"name": "diffFields", "type": {"type": "array", "items": "string"}},
  {"name": "changedFields", "type": {"type": "array", "items": "string"}}
]}, "doc": "Data:EventHeader"}`

func optional(name, avroType, doc string) string {
	return `{"name": "` + name + `", "type": ["null", "` + avroType + `"], "doc": "Data:` + doc + `", "default": null}`
}

// ContactSchema is ContactChangeEvent, with the compound fields Name
// (position 1) and MailingAddress (position 5).
var ContactSchema = `{"type": "record", "name": "ContactChangeEvent", "namespace": "com.sforce.eventbus", "fields": [` + header + `,
  {"name": "Name", "type": ["null", {"type": "record", "name": "Switchable_PersonName", "fields": [
    ` + optional("Salutation", "string", "Picklist") + `,
    ` + optional("FirstName", "string", "Text") + `,
    ` + optional("LastName", "string", "Text") + `
  ]}], "doc": "Data:PersonName", "default": null},
  ` + optional("Email", "string", "Email") + `,
  ` + optional("Phone", "string", "Phone") + `,
  ` + optional("Title", "string", "Text") + `,
  {"name": "MailingAddress", "type": ["null", {"type": "record", "name": "Address", "fields": [
    ` + optional("Street", "string", "TextArea") + `,
    ` + optional("City", "string", "Text") + `,
    ` + optional("PostalCode", "string", "Text") + `,
    ` + optional("Country", "string", "Text") + `
  ]}], "doc": "Data:Address", "default": null},
  ` + optional("Birthdate", "int", "Date") + `,
  ` + optional("HasOptedOutOfEmail", "boolean", "Switchable_Boolean") + `,
  ` + optional("Description", "string", "TextArea") + `,
  ` + optional("OwnerId", "string", "EntityId") + `,
  ` + optional("CreatedDate", "long", "DateTime") + `,
  ` + optional("CreatedById", "string", "EntityId") + `,
  ` + optional("LastModifiedDate", "long", "DateTime") + `,
  ` + optional("LastModifiedById", "string", "EntityId") + `
]}`

// InvoiceSchema is Invoice__ChangeEvent, the change event of the custom
// object Invoice__c.
var InvoiceSchema = `{"type": "record", "name": "Invoice__ChangeEvent", "namespace": "com.sforce.eventbus", "fields": [` + header + `,
  ` + optional("Name", "string", "Text") + `,
  ` + optional("Amount__c", "double", "Currency") + `,
  ` + optional("Status__c", "string", "Picklist") + `,
  ` + optional("Due__c", "int", "Date") + `,
  ` + optional("OwnerId", "string", "EntityId") + `,
  ` + optional("CreatedDate", "long", "DateTime") + `,
  ` + optional("LastModifiedDate", "long", "DateTime") + `
]}`
