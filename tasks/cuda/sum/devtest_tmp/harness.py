# Temporary device test harness (not part of the task): compiles the .cu files with NVRTC
# through CuPy, launches them per their directives, checks against float64 truths and
# reference.cu, checks guards/determinism, and times the visible shapes with a cold L2.
import glob, itertools, json, os, re, sys, time
import numpy as np
import cupy as cp

PRELUDE = open('src/backend/cuda/prelude.cuh').read()
INC = [d for d in glob.glob('/usr/local/cuda*/include')][:1]
TIME = '--no-time' not in sys.argv
only = [a for a in sys.argv[1:] if not a.startswith('-')]

def cexpr(e):
    e = e.replace('&&', ' and ').replace('||', ' or ').replace('/', '//')
    return e

def ev(e, env):
    return int(eval(cexpr(e), {'min': min, 'max': max}, dict(env)))

def split_top(s):
    out, depth, cur = [], 0, ''
    for ch in s:
        if ch == '(': depth += 1
        if ch == ')': depth -= 1
        if ch == ',' and depth == 0:
            out.append(cur); cur = ''
        else:
            cur += ch
    out.append(cur)
    return [x.strip() for x in out]

def directives(src):
    params, requires, launches = [], [], []
    for line in src.splitlines():
        i = line.find('kforge:')
        if i < 0: continue
        body = line[i + 7:]
        if '*/' in body: body = body[:body.index('*/')]
        kind, _, rest = body.strip().partition(' ')
        rest = rest.strip()
        if kind == 'param':
            name, vals = rest.split('=', 1)
            params.append((name.strip(), [v.strip() for v in vals.split(',') if v.strip()]))
        elif kind == 'require':
            requires.append(rest)
        elif kind == 'launch':
            d, pos = {}, 0
            while pos < len(rest):
                while pos < len(rest) and rest[pos] == ' ': pos += 1
                if pos >= len(rest): break
                eq = rest.index('=', pos); key = rest[pos:eq]; p = eq + 1
                if rest[p] == '(':
                    depth, q = 0, p
                    while True:
                        if rest[q] == '(': depth += 1
                        elif rest[q] == ')':
                            depth -= 1
                            if depth == 0: break
                        q += 1
                    d[key] = split_top(rest[p + 1:q]); pos = q + 1
                else:
                    q = rest.find(' ', p); q = len(rest) if q < 0 else q
                    d[key] = rest[p:q]; pos = q
            launches.append(d)
        else:
            raise SystemExit('unknown directive ' + kind)
    return params, requires, launches

class Variant:
    def __init__(self, path, src, pv, launches):
        self.path, self.pv, self.launches = path, pv, launches
        opts = ('-std=c++17', '--gpu-architecture=sm_90') + tuple('-I' + i for i in INC) + tuple('-D%s=%s' % kv for kv in pv.items())
        self.mod = cp.RawModule(code=PRELUDE + src, options=opts, backend='nvrtc')
        self.fns = [self.mod.get_function(l['kernel']) for l in launches]
        self.name = os.path.relpath(path) + ('' if not pv else ' ' + ','.join('%s=%s' % kv for kv in pv.items()))
    def run(self, args, sizes):
        env = dict(sizes); env.update({k: int(v) for k, v in self.pv.items()})
        for fn, l in zip(self.fns, self.launches):
            g = [ev(e, env) for e in l['grid']] + [1] * (3 - len(l['grid']))
            b = [ev(e, env) for e in l['block']] + [1] * (3 - len(l['block']))
            sm = ev(l.get('smem', '0'), env)
            assert 1 <= g[0] <= 2**31 - 1 and 1 <= g[1] <= 65535 and 1 <= g[2] <= 65535, g
            assert b[0] * b[1] * b[2] <= 1024 and min(b) >= 1, b
            fn(tuple(g), tuple(b), args, shared_mem=sm)

def variants(taskdir):
    out = []
    for path in [taskdir + '/reference.cu'] + sorted(glob.glob(taskdir + '/candidates/*.cu')):
        src = open(path).read()
        params, requires, launches = directives(src)
        combos = list(itertools.product(*[v for _, v in params])) if params else [()]
        for c in combos:
            pv = {n: v for (n, _), v in zip(params, c)}
            if not all(ev(r, {k: int(v) for k, v in pv.items()}) for r in requires):
                continue
            out.append(Variant(path, src, pv, launches))
    return out

GUARD = 4096
def alloc(count, dtype=np.float32):
    return cp.empty(count + GUARD, dtype=dtype)

# ---- task definitions: shapes, input generation, truth ----
rng = cp.random.default_rng(1234)
def normal(n, std, spikes):
    x = (rng.standard_normal(n, dtype=cp.float32) * std).astype(cp.float32)
    if spikes:
        x[::512] *= 32
    return x

def make_softmax(s, trial):
    r, c = s['rows'], s['cols']
    x = normal(r * c, 2.0, trial == 1)
    if trial == 2:
        x = x * 4; x.reshape(r, c)[r // 2, :] = 0; x[::997] = 0
    ins = {'x': x}
    x64 = x.astype(cp.float64).reshape(r, c)
    e = cp.exp(x64 - x64.max(axis=1, keepdims=True))
    return ins, {'y': (e / e.sum(axis=1, keepdims=True)).ravel()}

def make_rmsnorm(s, trial):
    r, c = s['rows'], s['cols']
    x = normal(r * c, 3.0, trial == 1)
    if trial == 2:
        x = x * 0.25; x.reshape(r, c)[r // 2, :] = 0; x[::997] = 0
    w = rng.uniform(0.5, 1.5, c, dtype=cp.float64).astype(cp.float32)
    if trial == 1:
        w[0] = 0.5; w[-1] = 1.5
    x64 = x.astype(cp.float64).reshape(r, c)
    y = x64 / cp.sqrt((x64 * x64).mean(axis=1, keepdims=True) + float(np.float32(1e-5))) * w.astype(cp.float64)
    return {'x': x, 'w': w}, {'y': y.ravel()}

def make_sum(s, trial):
    n = s['n']
    lo, hi = (0.0, 1.0) if trial < 2 else (0.3, 0.6)
    x = rng.uniform(lo, hi, n, dtype=cp.float64).astype(cp.float32)
    if trial == 1:
        x[::512] = 1.0
    return {'x': x}, {'out': x.astype(cp.float64).sum().reshape(1)}

def make_transpose(s, trial):
    r, c = s['rows'], s['cols']
    a = normal(r * c, 1.0, trial == 1)
    return {'a': a}, {'b': a.reshape(r, c).T.copy().ravel().astype(cp.float64)}

TASKS = {
    'softmax': (make_softmax, [(1, 1), (1, 4096), (4096, 1), (4096, 4096), (1000, 3001), (7, 4093), (3, 4095),
                               (33, 1025), (17, 1023), (2, 4), (3, 5), (4096, 4095), (127, 257), (64, 2), (5, 4092), (9, 3)]),
    'rmsnorm': (make_rmsnorm, [(1, 1), (1, 8192), (8192, 1), (4096, 4096), (777, 3001), (2048, 8192), (8191, 2047),
                               (8192, 2048), (3, 8191), (5, 8189), (1025, 1023), (2, 4), (7, 8188), (2047, 8192)]),
    'sum': (make_sum, [(1,), (2,), (3,), (4,), (5,), (7,), (8,), (1023,), (1024,), (1025,), (4097,), (100003,),
                       (2**24,), (2**25,), (2**25 - 1,), (2**24 + 3,), (135168 * 16 + 5,), (540673,)]),
    'transpose': (make_transpose, [(1, 1), (1, 8192), (8192, 1), (4096, 4096), (1000, 3001), (8192, 2048),
                                   (2048, 8192), (33, 31), (31, 33), (4095, 4097), (8191, 2047), (2, 3), (64, 64), (65, 63)]),
}

def cmp(o, t, tol):
    o = o.astype(cp.float64); t = t.astype(cp.float64)
    lim = tol['atol'] + tol['rtol'] * cp.abs(t)
    d = cp.abs(o - t)
    ok = d <= lim
    if bool(ok.all()):
        return None
    i = int(cp.argmax(cp.where(ok, -1.0, cp.nan_to_num(d, nan=1e300) - lim)))
    return '%d bad of %d, e.g. [%d] got %r want %r' % (int((~ok).sum()), o.size, i, float(o[i]), float(t[i]))

def copy_bw():
    n = 1 << 28  # 1 GiB
    a = cp.ones(n, dtype=cp.float32); b = cp.empty_like(a)
    for _ in range(3): b[...] = a
    ts = []
    for _ in range(10):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record(); b[...] = a; e1.record(); e1.synchronize()
        ts.append(cp.cuda.get_elapsed_time(e0, e1) / 1e3)
    return 2 * 4 * n / np.median(ts)

def main():
    failures = []
    flush = cp.empty(64 * 1024 * 1024, dtype=cp.float32)  # 256 MiB > 2 x L2
    bw = copy_bw() if TIME else None
    if bw: print('copy bandwidth %.0f GB/s' % (bw / 1e9))
    timings = []
    for tname in (only or list(TASKS)):
        task = json.load(open('tasks/cuda/%s/task.json' % tname))
        make, shapes = TASKS[tname]
        names = list(task['sizes'])
        vs = variants('tasks/cuda/' + tname)
        print('== %s: %d variants' % (tname, len(vs)))
        tol = task.get('tolerance', {'rtol': 1e-4, 'atol': 1e-5})
        det = task.get('determinism', 'exact') == 'exact'
        for shp in shapes:
            sizes = dict(zip(names, shp))
            env = dict(sizes)
            for trial in range(3):
                ins, truth = make(sizes, trial)
                # allocate arena-like buffers
                bufs, outs = {}, []
                for a in task['args']:
                    if 'shape' in a:
                        cnt = 1
                        for d in a['shape']:
                            cnt *= ev(str(d), env)
                        buf = alloc(cnt)
                        buf[cnt:] = 777.0
                        if a['io'] == 'in':
                            buf[:cnt] = ins[a['name']]
                        bufs[a['name']] = (buf, cnt, a['io'])
                argv = []
                for a in task['args']:
                    if 'shape' in a:
                        argv.append(bufs[a['name']][0])
                    elif a['type'] == 'i64':
                        argv.append(np.int64(ev(str(a['value']), env)))
                    else:
                        argv.append(np.float32(a['value']))
                inputs_before = {k: b[0].copy() for k, b in bufs.items() if b[2] == 'in'}
                refout = None
                for v in vs:
                    res = []
                    for poison in (np.float32(np.nan), np.float32(-3.25e7)):
                        for k, (buf, cnt, io) in bufs.items():
                            if io == 'out': buf[:cnt] = poison
                        v.run(tuple(argv), sizes)
                        cp.cuda.Device().synchronize()
                        res.append({k: buf[:cnt].copy() for k, (buf, cnt, io) in bufs.items() if io == 'out'})
                    bad = []
                    for k, (buf, cnt, io) in bufs.items():
                        if not bool((buf[cnt:] == 777.0).all()): bad.append('guard ' + k)
                        if io == 'in' and not bool((buf == inputs_before[k]).all()): bad.append('input changed ' + k)
                    for k, t in truth.items():
                        c1 = cmp(res[0][k], t, tol)
                        if c1: bad.append('%s vs float64: %s' % (k, c1))
                        if det and not bool((res[0][k].view(cp.uint32) == res[1][k].view(cp.uint32)).all()):
                            bad.append('nondeterministic/unwritten ' + k)
                        if not det:
                            c2 = cmp(res[1][k], t, tol)
                            if c2: bad.append('%s second run: %s' % (k, c2))
                        if refout is None:
                            pass
                        else:
                            c3 = cmp(res[0][k], refout[k], tol)
                            if c3: bad.append('%s vs reference.cu: %s' % (k, c3))
                    if refout is None:
                        refout = res[0]
                    if bad:
                        msg = '%s %s trial %d: %s' % (v.name, sizes, trial, '; '.join(bad))
                        print('FAIL', msg); failures.append(msg)
        print('   %s: checks done' % tname)
        if not TIME: continue
        for shp in [tuple(s[n] for n in names) for s in task['shapes']] + ([(2**25,)] if tname == 'sum' else []):
            sizes = dict(zip(names, shp)); env = dict(sizes)
            ins, _ = make(sizes, 0)
            argv = []
            for a in task['args']:
                if 'shape' in a:
                    cnt = 1
                    for d in a['shape']: cnt *= ev(str(d), env)
                    buf = alloc(cnt)
                    if a['io'] == 'in': buf[:cnt] = ins[a['name']]
                    argv.append(buf)
                elif a['type'] == 'i64':
                    argv.append(np.int64(ev(str(a['value']), env)))
                else:
                    argv.append(np.float32(a['value']))
            nbytes = ev(task['cost']['bytes'], env)
            for v in vs:
                ts = []
                for it in range(23):
                    flush.fill(it)
                    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
                    e0.record(); v.run(tuple(argv), sizes); e1.record(); e1.synchronize()
                    if it >= 3: ts.append(cp.cuda.get_elapsed_time(e0, e1) / 1e3)
                t = float(np.median(ts))
                line = '%-10s %-22s %-48s %9.1f us %7.0f GB/s %5.1f%% of copy' % (tname, str(shp), v.name, t * 1e6, nbytes / t / 1e9, 100 * nbytes / t / bw)
                print(line); timings.append(line)
    print('\nFAILURES: %d' % len(failures))
    for f in failures[:50]: print('  ', f)
    out = os.environ.get('OUT')
    if out:
        open(os.path.join(out, 'timings.txt'), 'w').write('\n'.join(timings) + '\n')
    print('\n'.join(timings))

main()
