// Verifies a message with the Standard Webhooks reference library
// (standardwebhooks, pinned in package.json), as a receiver would, for the
// message read as JSON from stdin: {"secret", "headers" (name to value),
// "body"}. Exits 0 when the library accepts it, 1 with its reason on
// stderr when it refuses. Used by internal/whsig/node_test.go.
import { Webhook } from 'standardwebhooks';

let input = '';
process.stdin.setEncoding('utf8');
for await (const chunk of process.stdin) input += chunk;
const { secret, headers, body } = JSON.parse(input);

try {
  // verify checks the timestamp against the clock (5 minutes either way),
  // then every v1 signature in webhook-signature; it throws on refusal.
  new Webhook(secret).verify(body, headers);
} catch (err) {
  process.stderr.write(`refused: ${err.message}\n`);
  process.exit(1);
}
