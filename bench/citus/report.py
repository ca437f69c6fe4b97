"""bench/citus/report.py WORKDIR: the table and the shares of bench/citus/run.sh.

Reads WORKDIR/cpu.tsv (setup, phase, node, operations, seconds, CPU ms of
the dispatchers, CPU ms of the other processes), count.tsv (setup, phase,
node, rows or deliveries), times.tsv (setup, switch-on, all completed) and
the sink's log sink.jsonl (requests tagged ?setup=...).
"""
import json
import sys

work = sys.argv[1]
cpu, cnt, times, order = {}, {}, {}, []
for line in open(work + '/cpu.tsv'):
    s, p, n, ops, secs, disp, rest = line.rstrip('\n').split('\t')
    cpu[(s, p, n)] = (int(ops), float(secs), float(disp), float(rest))
    if s not in order:
        order.append(s)
for line in open(work + '/count.tsv'):
    s, p, n, c = line.rstrip('\n').split('\t')
    cnt[(s, p, n)] = int(c)
for line in open(work + '/times.tsv'):
    s, t0, t1 = line.split('\t')
    times[s] = (float(t0), float(t1))
arrivals = {}
for line in open(work + '/sink.jsonl'):
    try:
        r = json.loads(line)
    except ValueError:
        continue
    path = r.get('path') or ''
    if 'setup=' in path:
        arrivals.setdefault(path.split('setup=')[1].split('&')[0], []).append(r['t'])


def label(s):
    return 'single node' if s == 'single' else 'coord + %s worker%s' % (s, '' if s == '1' else 's')


def nodes(s):
    return sorted({n for (x, _, n) in cpu if x == s},
                  key=lambda n: (n != 'node', n != 'coordinator', n))


def per_op(s, p, n, part='all'):
    """CPU ms per operation of node n in phase p: all processes, the
    dispatchers, or the others."""
    if (s, p, n) not in cpu:
        return float('nan')
    ops, _, disp, rest = cpu[(s, p, n)]
    return {'all': disp + rest, 'disp': disp, 'rest': rest}[part] / ops


def idle_rate(s, n, part='all'):
    """CPU ms per second of node n doing nothing (the idle phase)."""
    return per_op(s, 'idle', n, part) / cpu[(s, 'idle', n)][1] if (s, 'idle', n) in cpu else 0.0


def count(s, p, n):
    tot = sum(v for (x, q, _), v in cnt.items() if x == s and q == p)
    c = cnt.get((s, p, n))
    if c is None or tot == 0:
        return '-', '-'
    return str(c), '%.1f%%' % (100.0 * c / tot)


print()
print('CPU ms per operation on each node (claims: the backends and background processes, without the')
print('dispatchers; deliveries: every process, the dispatchers\' part in brackets); idle: CPU ms per second')
print('with nothing to do, the dispatchers\' part in brackets.')
print()
hdr = '%-18s %-12s %9s %7s %7s %17s %8s %7s %15s'
print(hdr % ('setup', 'node', 'ms/claim', 'rows', 'share', 'ms/delivery', 'deliv.', 'share', 'idle ms/s'))
for s in order:
    for n in nodes(s):
        r, rs = count(s, 'claim', n)
        d, ds = count(s, 'deliver', n)
        print(hdr % (label(s), n, '%.3f' % per_op(s, 'claim', n, 'rest'), r, rs,
                     '%.3f (%.3f)' % (per_op(s, 'deliver', n), per_op(s, 'deliver', n, 'disp')), d, ds,
                     '%.0f (%.0f)' % (idle_rate(s, n), idle_rate(s, n, 'disp'))))
    if len(nodes(s)) > 1:
        print(hdr % ('', 'all nodes', '%.3f' % sum(per_op(s, 'claim', n, 'rest') for n in nodes(s)), '', '',
                     '%.3f' % sum(per_op(s, 'deliver', n) for n in nodes(s)), '', '', ''))
print()

sc = per_op('single', 'claim', 'node', 'rest') if 'single' in order else None
sd = per_op('single', 'deliver', 'node') if 'single' in order else None
for s in order:
    ns = nodes(s)
    if s != 'single':
        workers = [n for n in ns if n.startswith('worker')]
        c = per_op(s, 'claim', 'coordinator', 'rest')
        tc = sum(per_op(s, 'claim', n, 'rest') for n in ns)
        wc = [per_op(s, 'claim', n, 'rest') for n in workers]
        line = '%s: coordinator CPU per claim %.3f ms = %.0f%% of this cluster\'s %.3f ms' % (label(s), c, 100 * c / tc, tc)
        if sc:
            line += ', %.0f%% of the single node\'s %.3f ms' % (100 * c / sc, sc)
        print(line)
        line = '  workers per claim: %s ms (%.3f in all' % (' / '.join('%.3f' % x for x in wc), sum(wc))
        if sc:
            line += ', %.2fx the single node' % (sum(wc) / sc)
        print(line + ')')
        if (s, 'wclaim', 'coordinator') in cpu:
            wcc = per_op(s, 'wclaim', 'coordinator', 'rest')
            wtc = sum(per_op(s, 'wclaim', n, 'rest') for n in ns)
            print('  claims sent to the workers: coordinator %.3f ms per claim = %.0f%% of this cluster\'s %.3f ms;'
                  ' workers %s ms' % (wcc, 100 * wcc / wtc, wtc,
                                      ' / '.join('%.3f' % per_op(s, 'wclaim', n, 'rest') for n in workers)))
        rows = [cnt.get((s, 'claim', n), 0) for n in workers]
        dels = [cnt.get((s, 'deliver', n), 0) for n in workers]
        print('  share of rows per worker: %s; deliveries per worker: %s; by the coordinator: %d' % (
            ' / '.join('%.1f%%' % (100.0 * x / max(1, sum(rows))) for x in rows),
            ' / '.join('%d (%.1f%%)' % (x, 100.0 * x / max(1, sum(dels))) for x in dels),
            cnt.get((s, 'deliver', 'coordinator'), 0)))
        td = sum(per_op(s, 'deliver', n) for n in ns)
        line = '  CPU per delivery, all nodes: %.3f ms' % td
        if sd:
            line += ' (%.2fx the single node\'s %.3f ms)' % (td / sd, sd)
        line += '; per worker %s, coordinator %.3f' % (
            ' / '.join('%.3f' % per_op(s, 'deliver', n) for n in workers), per_op(s, 'deliver', 'coordinator'))
        print(line)
    else:
        print('single node: CPU per claim %.3f ms, per delivery %.3f ms' % (sc, sd))
    # Of the delivery CPU, what the nodes' dispatchers spend when idle over
    # the same time (rounds that find nothing, housekeeping).
    if s in times:
        t0, t1 = times[s]
        ops = cpu[(s, 'deliver', ns[0])][0]
        idle_part = sum(idle_rate(s, n) for n in ns) * (t1 - t0) / ops
        a = sorted(arrivals.get(s, []))
        if a:
            print('  deliveries: switch-on to first request %.2f s, first to last request %.2f s (%.0f/s), '
                  'last request to all completed %.2f s; idle cost over that time %.3f ms per delivery (all nodes)'
                  % (a[0] - t0, a[-1] - a[0], (len(a) - 1) / max(1e-9, a[-1] - a[0]), t1 - a[-1], idle_part))

# The last line (SPEC §23), for the setup with the most workers: the whole
# cluster's CPU per delivery and per claim through the coordinator, each
# against the single node's in this run, and the busiest idle worker's CPU
# per second.
clusters = [s for s in order if s != 'single']
if sc and sd and clusters:
    s = max(clusters, key=lambda x: int(x))
    ns = nodes(s)
    workers = [n for n in ns if n.startswith('worker')]
    td = sum(per_op(s, 'deliver', n) for n in ns)
    tc = sum(per_op(s, 'claim', n, 'rest') for n in ns)
    print()
    # The floor under the claim's figure: the seed's bare statement on a
    # plain distributed table against the same on one node, same run.
    if ('single', 'seed', 'node') in cpu and (s, 'seed', 'coordinator') in cpu:
        ss = per_op('single', 'seed', 'node', 'rest')
        ts = sum(per_op(s, 'seed', n, 'rest') for n in ns)
        print('the seed\'s statement on a plain table: %.3f ms on one node, %.3f ms on Citus (coordinator %.3f)'
              ' = %.2fx; idemgate\'s claim on Citus = %.2fx that' % (
                  ss, ts, per_op(s, 'seed', 'coordinator', 'rest'), ts / ss, tc / ts))
    print('citus: delivery %.2fx, claim %.2fx the single node\'s CPU, idle %.0f ms/s'
          % (td / sd, tc / sc, max(idle_rate(s, n) for n in workers)))
