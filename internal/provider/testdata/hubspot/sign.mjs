// Prints the HubSpot v3 webhook signature computed by HubSpot's official Node
// client (@hubspot/api-client, pinned in package.json) for the request read as
// JSON from stdin: {"secret", "method", "uri", "body", "timestamp"}.
// Used by TestHubSpotSignatureFromOfficialClient (web/hubspot_test.go).
import hubspot from '@hubspot/api-client';

const { Signature } = hubspot;

let input = '';
process.stdin.setEncoding('utf8');
for await (const chunk of process.stdin) input += chunk;
const { secret, method, uri, body, timestamp } = JSON.parse(input);

// @hubspot/api-client 13.x: getSignature(method, signatureVersion, options).
const signature = Signature.getSignature(method, 'v3', {
  clientSecret: secret,
  requestBody: body,
  url: uri,
  timestamp,
});
process.stdout.write(signature + '\n');
