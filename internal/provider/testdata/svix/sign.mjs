// Prints the signature Svix's own library (svix, pinned in package.json)
// puts in svix-signature for the message read as JSON from stdin:
// {"secret", "id", "timestamp" (unix seconds), "body"}.
// Used by TestStandardSignatureFromSvix (internal/provider/svix_test.go).
import { Webhook } from 'svix';

let input = '';
process.stdin.setEncoding('utf8');
for await (const chunk of process.stdin) input += chunk;
const { secret, id, timestamp, body } = JSON.parse(input);

// svix 2.x: Webhook.sign(msgId, timestamp as a Date, payload).
const signature = new Webhook(secret).sign(id, new Date(timestamp * 1000), body);
process.stdout.write(signature + '\n');
