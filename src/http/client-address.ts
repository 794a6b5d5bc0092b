import { isIPv6 } from 'node:net';

const IPV4_MAPPED = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i;

/**
 * The address a client's failed authentications are counted under: its IPv4 address, or the /64
 * of its IPv6 address (one host usually holds a whole /64, so counting single IPv6 addresses would
 * give it 2^64 limits). `req.ip` is the peer's address unless `trust proxy` names the proxies
 * whose X-Forwarded-For may be believed.
 */
export function clientAddress(ip: string | undefined): string {
  if (!ip) return 'unknown';
  const mapped = IPV4_MAPPED.exec(ip);
  if (mapped) return mapped[1]!;
  if (!isIPv6(ip)) return ip;
  return `${expandIPv6(ip).slice(0, 4).join(':')}::/64`;
}

/** The eight 16-bit groups of an IPv6 address, without leading zeros (a zone index is dropped). */
function expandIPv6(ip: string): string[] {
  const [head = '', tail] = ip.split('%')[0]!.toLowerCase().split('::');
  const groups = (text: string | undefined) => (text ? text.split(':') : []);
  const left = groups(head);
  const right = groups(tail);
  const middle = tail === undefined ? [] : Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...middle, ...right].map((group) => group.replace(/^0+(?=.)/, ''));
}
