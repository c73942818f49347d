// Sends one message through the log e-mail transport, then kills itself with SIGKILL at once:
// whatever reached standard error was written synchronously (test/email-log-transport.test.ts).
import pino from 'pino';
import { createEmailTransport } from '../../src/email/transport.js';

const transport = createEmailTransport(undefined, pino({ level: 'silent' }));
await transport.send({ id: 'm-1', attempts: 1, to: 'ada@example.com', subject: 'Welcome', text: 'link: http://x/setpassword/1/2', html: '' }, 'Lattice <no-reply@example.com>');
process.kill(process.pid, 'SIGKILL');
