# torch_ref.py - the runner of a task's PyTorch reference (docs/torch.md), a trusted process
# of kforge's started by the checker in place of kforge-worker (kf_worker_opts.exec), with
# the same channel (fd 3), arena (fd 4, read-write) and inputs' region (fd 5, read-only).
# It speaks the CPU worker's protocol (src/sandbox/proto.h): a configuration message
# first, SETUP_OK, then READY once torch and the reference module are imported (LOADFAIL
# with the reason otherwise); for each RUN, START, the call, DONE. Buffers are tensors
# over the shared mappings (torch.frombuffer: no copy), the inputs read-only; outputs are
# written in place or returned, then copied into the output buffers. A failure is sent as
# FAIL with its text and the process exits: the checker reports it as a task error.
# Embedded into libkforge as text (passed with python3 -c): never run from the source tree.
#
# A CUDA task's reference (a "device cuda ..." line in the configuration: docs/torch.md "A
# PyTorch reference for a CUDA task") computes on the GPU instead: torch and CUDA are set
# up before SETUP_OK (a failure there, no torch or no GPU, is the environment's: the
# spawn fails with the reason), with TF32 and reduced-precision reductions off and
# deterministic algorithms on. Each call copies every buffer of the arena to the device
# (the outputs with their sentinels), flushes L2 and waits for an idle device as the RUN's
# flags ask (as a GPU worker does), records CUDA events around the reference's call and
# its outputs' placement, synchronises, and copies the outputs and inout buffers back into
# the arena (a timed call its inputs too, into scratch: a GPU worker copies its whole span
# back, and bench compares the overheads); DONE carries the event time, as a GPU worker's
# does.
#
# With the argument "warm" it is the warm process instead (torch.c, docs/torch.md "The
# warm process"): it imports torch once, sets one thread, sends "READY python torch" on
# its control channel (fd 3), and then, for each request (one byte with the runner's six
# descriptors: stdin, stdout, stderr, channel, arena, inputs' region), forks a runner:
# an intermediate process forks the runner and exits, so that the runner becomes a child
# of the coordinator (its subreaper), which waits for it, freezes it and kills it like
# any worker; the reply is "PID n". The runner calls setsid(), takes the six
# descriptors as 0-5 and runs main() as a cold process would: the warm process itself
# never imports a reference, runs no torch operation and takes no input, so every runner
# starts from the state a cold process has after `import torch`.
#
# With "serve PATH IDENT IDLE" it is the warm server (serve(), docs/torch.md "Across
# invocations"): the same, outliving one kforge process, on a Unix socket at PATH.
import fcntl
import importlib.util
import mmap
import os
import random
import socket
import struct
import sys
import time
import traceback
import warnings

MAGIC = 0x6B66726B
READY, LOADFAIL, RUN, DONE, EXIT, START, SETUP_OK, FAIL = 1, 2, 3, 4, 5, 6, 7, 8


def main():
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, 0, 3)
    raw = sock.recv(1 << 16)
    text = raw[8:].split(b"\0", 1)[0].decode()
    cfg, args = {}, []
    for line in text.split("\n"):
        key, _, val = line.partition(" ")
        if key == "arg":
            args.append(val.split())
        elif key:
            cfg[key] = val
    (run_size, off_at, ival_at, fval_at, ext_at, done_size, ns_at, text_size,
     maxdims) = (int(x) for x in cfg["msg"].split())
    done = bytearray(done_size)

    def send(kind, seq, ns):
        struct.pack_into("<IIII", done, 0, MAGIC, kind, seq, 0)
        struct.pack_into("<Q", done, ns_at, ns)
        sock.send(done)

    def send_text(kind, msg):
        out = bytearray(text_size)
        struct.pack_into("<II", out, 0, MAGIC, kind)
        enc = msg.encode("utf-8", "replace")[: text_size - 9]
        out[8:8 + len(enc)] = enc
        sock.send(out)

    gpu = cfg.get("device", "").split()
    cuda = bool(gpu) and gpu[0] == "cuda"
    if not cuda:
        send(SETUP_OK, 0, 0)
    cpus = cfg.get("cpus", "-")
    if cpus != "-":
        try:
            os.sched_setaffinity(0, {int(c) for c in cpus.split(",")})
        except OSError:
            pass
    threads = int(cfg.get("threads", "1"))
    if cuda:
        # cuBLAS's deterministic workspace; read when CUDA starts in this process (never
        # in the warm process, which does not touch CUDA: a fork would break it)
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    try:
        import torch
    except Exception as e:  # noqa: BLE001 - any import failure is the same answer
        send_text(LOADFAIL, "%s cannot import torch (%s: %s): set KFORGE_PYTHON to a python3 with "
                  "torch, or run `make deps` (docs/torch.md)" % (sys.executable, type(e).__name__, e))
        return 2
    torch.set_num_threads(threads)
    gpu_state = None
    if cuda:
        try:
            gpu_state = cuda_setup(torch, gpu)
        except Exception as e:  # noqa: BLE001
            gpu_state = "%s: %s" % (type(e).__name__, e)
        if isinstance(gpu_state, str):
            send_text(LOADFAIL, "a CUDA task's PyTorch reference needs a GPU: torch %s of %s: %s; set "
                      "KFORGE_PYTHON to a python3 whose torch has CUDA, on a machine with a GPU "
                      "(docs/torch.md)" % (torch.__version__, sys.executable, gpu_state))
            return 2
        send(SETUP_OK, 0, 0)
    # the same start for every runner, cold or forked by the warm process: torch seeds its
    # generator from the OS at import, and a fork would share the warm process's seed
    # (torch.manual_seed seeds every CUDA device's generator too)
    torch.manual_seed(0)
    random.seed(0)
    if cuda:
        torch.cuda.manual_seed_all(0)
    path, entry = cfg["ref"], cfg["entry"]
    try:
        sys.path.insert(0, os.path.dirname(path))
        spec = importlib.util.spec_from_file_location("kforge_reference", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        fn = getattr(mod, entry, None)
        if not callable(fn):
            raise AttributeError("%s defines no function %s" % (path, entry))
    except Exception as e:  # noqa: BLE001
        send_text(LOADFAIL, "%s: %s: %s" % (path, type(e).__name__, e))
        return 2
    dtypes = {"f32": torch.float32, "f64": torch.float64, "i32": torch.int32, "i64": torch.int64,
              "u8": torch.uint8, "f16": torch.float16, "bf16": torch.bfloat16}
    size = os.fstat(4).st_size
    arena = mmap.mmap(4, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    inputs = mmap.mmap(5, size, mmap.MAP_SHARED, mmap.PROT_READ)
    warnings.filterwarnings("ignore", message=".*not writable.*")
    outs = [i for i, a in enumerate(args) if a[1] == "buf" and a[3] == "out"]
    back = [i for i, a in enumerate(args) if a[1] == "buf" and a[3] in ("out", "inout")]
    if cuda:
        pin(torch, arena, inputs, size)

    def tensor(i, msg):
        name, _, ty, io, nd = args[i]
        off = struct.unpack_from("<Q", msg, off_at + 8 * i)[0]
        dims = struct.unpack_from("<%dq" % maxdims, msg, ext_at + 8 * maxdims * i)[: int(nd)]
        count = 1
        for d in dims:
            count *= d
        if count == 0:
            return torch.empty(dims, dtype=dtypes[ty])
        region, at = (inputs, off - size) if off >= size else (arena, off)
        return torch.frombuffer(region, dtype=dtypes[ty], count=count, offset=at).view(dims)

    def scalar(i, msg):
        if args[i][2] in ("f32", "f64"):
            return struct.unpack_from("<d", msg, fval_at + 8 * i)[0]
        return struct.unpack_from("<q", msg, ival_at + 8 * i)[0]

    def place(result, ts):
        if result is None:
            return
        got = [result] if isinstance(result, torch.Tensor) else list(result)
        if len(got) != len(outs) or not all(isinstance(g, torch.Tensor) for g in got):
            raise TypeError("%s returned %d value(s); the task has %d out buffer(s): return one tensor "
                            "per out buffer, in order, or None after writing them in place"
                            % (entry, len(got), len(outs)))
        for k, g in zip(outs, got):
            dst = ts[k]
            if g.data_ptr() == dst.data_ptr() and g.numel() == dst.numel():
                continue
            if g.numel() != dst.numel():
                raise ValueError("%s returned %s for %s, whose shape is %s"
                                 % (entry, tuple(g.shape), args[k][0], tuple(dst.shape)))
            dst.copy_(g.reshape(dst.shape))

    clock = time.CLOCK_MONOTONIC
    if cuda:
        gpu_state.update(done=done, sock=sock, ns_at=ns_at)
    send(READY, 0, 0)
    with torch.inference_mode():
        while True:
            msg = sock.recv(run_size + 64)
            if len(msg) < 16:
                return 0
            magic, kind, seq = struct.unpack_from("<III", msg)
            if magic != MAGIC or kind == EXIT:
                return 0
            if kind != RUN or len(msg) != run_size:
                return 3
            try:
                ts = [tensor(i, msg) if a[1] == "buf" else scalar(i, msg) for i, a in enumerate(args)]
            except Exception as e:  # noqa: BLE001
                send_text(FAIL, "%s: the arguments: %s: %s" % (path, type(e).__name__, e))
                return 3
            if not cuda:
                send(START, seq, time.clock_gettime_ns(clock))
            try:
                if cuda:
                    gpu_call(torch, gpu_state, msg, seq, ts, back, fn, place, send, clock)
                else:
                    place(fn(*ts), ts)
            except Exception as e:  # noqa: BLE001
                tb = traceback.extract_tb(e.__traceback__)
                where = next((f for f in reversed(tb) if f.filename == path), None)
                at = " (line %d)" % where.lineno if where else ""
                send_text(FAIL, "%s%s: %s: %s" % (path, at, type(e).__name__, e))
                return 3
            if not cuda:
                send(DONE, seq, time.clock_gettime_ns(clock))
            del ts


IDLE_PROBE_NS, IDLE_PROBES, IDLE_BUDGET_NS = 150000, 3, 20000000
# A timed call's gate: the stream spins (torch.cuda._sleep) before the flush for at least
# this long, and twice the time Python took to queue the previous timed call's work, at
# most GATE_MAX_NS: the event span then holds the GPU's work, not the time it waited for
# the interpreter to queue the next kernel (a GPU worker queues its launches from C at
# once). bench's warm-up rounds set it for each shape.
GATE_MIN_NS, GATE_MAX_NS = 200000, 50000000


def cuda_setup(torch, gpu):
    """CUDA for a CUDA task's reference: a dict, or the reason there is none (a str)."""
    if not torch.backends.cuda.is_built():
        return "built without CUDA (a CPU-only wheel)"
    if not torch.cuda.is_available():
        return "built for CUDA %s, it sees no CUDA device (torch.cuda.is_available() is False)" % torch.version.cuda
    flags_at, gflags_at, dev_at, idle_at, flush, wait, host, busy = (int(x) for x in gpu[1:9])
    # a true f32 reference: no TF32, no reduced-precision reductions; the same algorithms
    # (and so the same bits) on every call
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    for knob in ("allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"):
        if hasattr(torch.backends.cuda.matmul, knob):
            setattr(torch.backends.cuda.matmul, knob, False)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    torch.use_deterministic_algorithms(True, warn_only=True)
    # but no NaN fill of every new tensor: it would be work inside the timed span that a
    # CUDA reference does not do (outputs already hold kforge's sentinel)
    det = getattr(getattr(torch, "utils", None), "deterministic", None)
    if det is not None and hasattr(det, "fill_uninitialized_memory"):
        det.fill_uninitialized_memory = False
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    props = torch.cuda.get_device_properties(dev)
    l2 = int(getattr(props, "L2_cache_size", 0) or 0) or (64 << 20)
    # the L2 flush reads twice the L2 (as a GPU worker's flush kernel does: a read leaves
    # only clean lines); the probe is one tiny kernel
    scratch = torch.ones(2 * l2 // 4, dtype=torch.float32, device=dev)
    sink = torch.zeros((), dtype=torch.float32, device=dev)
    probe = torch.zeros(1, dtype=torch.float32, device=dev)
    torch.sum(scratch, 0, out=sink)
    probe.add_(1)
    ev = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
    # the gate's clock: how many cycles torch.cuda._sleep spins per ns (after a first
    # launch, which loads the kernel)
    sleep, per_ns = getattr(torch.cuda, "_sleep", None), 0.0
    if sleep:
        sleep(1000)
        ev[0].record()
        sleep(1 << 20)
        ev[1].record()
        torch.cuda.synchronize()
        ms = ev[0].elapsed_time(ev[1])
        per_ns = (1 << 20) / (ms * 1e6) if ms > 0 else 0.0
    torch.cuda.synchronize()
    return {"dev": dev, "scratch": scratch, "sink": sink, "probe": probe, "ev": ev,
            "sleep": sleep if per_ns > 0 else None, "per_ns": per_ns, "gate_ns": GATE_MIN_NS,
            "at": (flags_at, gflags_at, dev_at, idle_at), "bits": (flush, wait, host, busy)}


def pin(torch, arena, inputs, size):
    """Page-lock the arena and the inputs' region, so the copies run by DMA, as a GPU
    worker's do; where the driver refuses, the copies go through its staging instead."""
    cudart = torch.cuda.cudart()
    for region, flags in ((arena, 0), (inputs, 8)):  # 8: cudaHostRegisterReadOnly
        try:
            ptr = torch.frombuffer(region, dtype=torch.uint8, count=1).data_ptr()
            if int(cudart.cudaHostRegister(ptr, size, flags)) != 0:
                clear = getattr(cudart, "cudaGetLastError", None)
                if clear:
                    clear()  # the refusal is not the next kernel's error
        except Exception:  # noqa: BLE001 - unpinned copies are slower, not wrong
            pass


def wait_idle(torch, g, clock):
    """A GPU worker's idle-device wait: three probes under 150 us in a row, within 20 ms.
    (time waited beyond the probes, whether the device stayed busy)"""
    t0 = time.clock_gettime_ns(clock)
    good, spans = 0, []
    while True:
        p0 = time.clock_gettime_ns(clock)
        g["probe"].add_(1)
        torch.cuda.synchronize()
        p1 = time.clock_gettime_ns(clock)
        spans.append(p1 - p0)
        good = good + 1 if p1 - p0 < IDLE_PROBE_NS else 0
        if good >= IDLE_PROBES:
            return max(0, p1 - t0 - sum(spans[-IDLE_PROBES:])), False
        if p1 - t0 > IDLE_BUDGET_NS:
            return p1 - t0, True


def gpu_call(torch, g, msg, seq, ts, back, fn, place, send, clock):
    """One call on the GPU: the buffers in, the timed span, the outputs back."""
    flags_at, gflags_at, dev_at, idle_at = g["at"]
    flush, wait, host, busy = g["bits"]
    flags = struct.unpack_from("<I", msg, flags_at)[0]
    dts = [t.to(g["dev"]) if isinstance(t, torch.Tensor) else t for t in ts]
    torch.cuda.synchronize()
    idle_ns, gbusy = wait_idle(torch, g, clock) if flags & wait else (0, False)
    e0, e1 = g["ev"]
    send(START, seq, time.clock_gettime_ns(clock))
    gated = flags & flush and g["sleep"] and not flags & host
    if gated:
        g["sleep"](int(g["gate_ns"] * g["per_ns"]))
    if flags & flush:
        torch.sum(g["scratch"], 0, out=g["sink"])
    q0 = time.clock_gettime_ns(clock)
    e0.record()
    place(fn(*dts), dts)
    if flags & host:
        torch.cuda.synchronize()
    e1.record()
    q1 = time.clock_gettime_ns(clock)
    torch.cuda.synchronize()
    if gated:  # the next call's gate covers this one's queueing twice over
        g["gate_ns"] = min(GATE_MAX_NS, max(GATE_MIN_NS, 2 * (q1 - q0)))
    end = time.clock_gettime_ns(clock)
    for k in back:
        ts[k].copy_(dts[k])
    if flags & flush:
        # timed: the in buffers come back too (into pinned scratch), as a GPU worker
        # copies its whole span back, so that this side's overhead around its report (the
        # gap bench compares with the candidate's) holds all of a GPU worker's
        for k, t in enumerate(dts):
            if isinstance(t, torch.Tensor) and k not in back and t.numel():
                nb = t.numel() * t.element_size()
                if g.get("spare") is None or g["spare"].numel() < nb:
                    g["spare"] = torch.empty(nb, dtype=torch.uint8, pin_memory=True)
                g["spare"][:nb].copy_(t.reshape(-1).view(torch.uint8))
    dev_ns = int(e0.elapsed_time(e1) * 1e6)
    done = g["done"]
    struct.pack_into("<IIII", done, 0, MAGIC, DONE, seq, 0)
    struct.pack_into("<I", done, gflags_at, busy if gbusy else 0)
    struct.pack_into("<Q", done, g["ns_at"], end)
    struct.pack_into("<Q", done, dev_at, dev_ns)
    struct.pack_into("<Q", done, idle_at, idle_ns)
    g["sock"].send(done)
    done[gflags_at:gflags_at + 4] = bytes(4)
    done[dev_at:dev_at + 8] = bytes(8)
    done[idle_at:idle_at + 8] = bytes(8)


def warm():
    ctl = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, 0, 3)
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        ctl.send(("FAIL %s cannot import torch (%s: %s)" % (sys.executable, type(e).__name__, e)).encode())
        return 2
    torch.set_num_threads(1)
    ctl.send(("READY %d.%d.%d %s" % (sys.version_info[:3] + (torch.__version__,))).encode())
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(ctl, 16, 8)
        except OSError:
            return 0
        if data == b"?" and not fds:  # the coordinator's ping: is this process alive?
            ctl.send(b"PONG")
            continue
        if len(fds) != 6:  # the coordinator's end closed (EOF), or a malformed request
            for fd in fds:
                os.close(fd)
            if not fds:
                return 0
            ctl.send(b"FAIL a request without six descriptors")
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        r, w = os.pipe()
        try:
            mid = os.fork()
        except OSError as e:
            ctl.send(("FAIL fork: %s" % e).encode())
            continue
        if mid == 0:  # the intermediate process: forks the runner, reports it, exits
            try:
                os.close(r)
                ready_r, ready_w = os.pipe()
                pid = os.fork()
                if pid == 0:  # the runner
                    rc = 1
                    try:
                        os.setsid()
                        ctl.detach()  # fd 3 becomes the runner's channel: never closed by this object
                        # above 0-5 first, so that no dup2 below clobbers a descriptor still needed
                        keep = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 64) for fd in fds + [ready_w]]
                        for fd in fds + [ready_r, ready_w, w]:
                            os.close(fd)
                        for i in range(6):
                            os.dup2(keep[i], i)
                        for fd in keep:
                            os.close(fd)  # the last one is ready_w: the intermediate goes on
                        rc = main()
                    except BaseException:  # noqa: BLE001 - reported on stderr, like a cold runner's
                        traceback.print_exc()
                    finally:
                        os._exit(rc or 0)
                os.close(ready_w)
                os.read(ready_r, 1)  # EOF once the runner has called setsid and taken its descriptors
                os.write(w, b"%d" % pid)
            finally:
                os._exit(0)
        os.close(w)
        for fd in fds:
            os.close(fd)
        os.waitpid(mid, 0)
        pid = os.read(r, 32)
        os.close(r)
        ctl.send(b"PID " + pid if pid else b"FAIL the runner was not started")


def serve(path, ident, idle):
    """The warm server (torch.c, docs/torch.md "Across invocations"): torch imported once,
    listening on path (a socket in a directory of this user's, mode 0700) for as long as
    requests come, exiting after idle seconds without a runner or a request. It keeps
    nothing but torch: no reference, no input, no output. Each connection, from this user
    only (SO_PEERCRED), may ask HELLO (the answer carries ident, which the client checks),
    QUIT (stop listening, end once the runners have), or for a runner: "F\\0" and the
    client's environment, with the runner's six descriptors and the client's working
    directory. The runner is forked (setsid, the descriptors as 0-5, the client's
    environment and directory, then main() as a cold runner) and the answer is "PID n";
    when it ends, "EXIT status" (its wait status) on the same connection."""
    import select
    import signal
    ready = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, 0, 3)
    if os.fork():  # the client reaps this one at once: the server is nobody's child of its
        os._exit(0)
    os.setsid()
    try:
        import torch
    except Exception:  # noqa: BLE001 - the client's runner then starts another way
        return 2
    torch.set_num_threads(1)
    me = os.getpid()
    lst = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    tmp = "%s.%d" % (path, me)
    try:
        os.unlink(tmp)
    except OSError:
        pass
    mask = os.umask(0o177)
    lst.bind(tmp)
    os.umask(mask)
    lst.listen(64)
    ino = os.stat(tmp).st_ino
    os.rename(tmp, path)  # atomically in the place of a stale or dead server's name

    def unlink_own():
        try:
            if os.stat(path).st_ino == ino:
                os.unlink(path)
        except OSError:
            pass

    try:
        ready.send(b"READY %d" % me)
        ready.close()
    except OSError:  # the client gave up waiting
        unlink_own()
        return 0
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *a: None)
    signal.set_wakeup_fd(wake_w)
    conns, runners = {}, {}
    state = {"last": time.monotonic(), "listening": True}
    uid_fmt = "3i"

    def reap():
        while runners:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            c = runners.pop(pid, None)
            if c is not None:
                try:
                    c.send(b"EXIT %d" % status)
                except OSError:
                    pass
                c.close()
            state["last"] = time.monotonic()

    def fork_runner(c, data, fds):
        env = dict(e.split(b"=", 1) for e in data[2:].split(b"\0") if b"=" in e)
        sys.stdout.flush()
        sys.stderr.flush()
        r, w = os.pipe()
        try:
            pid = os.fork()
        except OSError as e:
            for fd in fds:
                os.close(fd)
            c.send(("FAIL fork: %s" % e).encode())
            return
        if pid == 0:  # the runner
            rc = 1
            try:
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                os.setsid()
                os.close(w)  # the server goes on: this process leads a group of its own
                os.close(r)
                for s in list(conns.values()) + list(runners.values()) + ([lst] if state["listening"] else []):
                    os.close(s.detach())
                os.close(wake_r)
                os.close(wake_w)
                keep = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 64) for fd in fds]
                for fd in fds:
                    os.close(fd)
                os.fchdir(keep[6])
                os.close(keep[6])
                for i in range(6):
                    os.dup2(keep[i], i)
                for fd in keep[:6]:
                    os.close(fd)
                os.environ.clear()
                os.environ.update({k.decode("utf-8", "surrogateescape"): v.decode("utf-8", "surrogateescape")
                                   for k, v in env.items()})
                rc = main()
            except BaseException:  # noqa: BLE001 - reported on stderr, like a cold runner's
                traceback.print_exc()
            finally:
                os._exit(rc or 0)
        os.close(w)
        for fd in fds:
            os.close(fd)
        os.read(r, 1)  # EOF once the runner has called setsid
        os.close(r)
        del conns[c.fileno()]
        runners[pid] = c
        state["last"] = time.monotonic()
        try:
            c.send(b"PID %d" % pid)
        except OSError:
            pass

    def request(c):
        try:
            data, fds, _, _ = socket.recv_fds(c, 1 << 17, 8)
        except OSError:
            data, fds = b"", []
        if data[:2] == b"F\0" and len(fds) == 7:
            fork_runner(c, data, fds)
            return
        for fd in fds:
            os.close(fd)
        if data == b"HELLO":
            c.send(b"READY %s %d" % (ident.encode(), me))
            return
        if data == b"QUIT" and state["listening"]:  # a newer server takes the name
            state["listening"] = False
            lst.close()
        del conns[c.fileno()]
        c.close()

    while True:
        if not runners and (not state["listening"] or time.monotonic() - state["last"] >= idle):
            break
        timeout = None if runners else max(0.0, idle - (time.monotonic() - state["last"]))
        rl = [wake_r] + list(conns.values()) + ([lst] if state["listening"] else [])
        try:
            got, _, _ = select.select(rl, [], [], timeout)
        except InterruptedError:
            continue
        for s in got:
            if s == wake_r:
                try:
                    while os.read(wake_r, 64):
                        pass
                except OSError:
                    pass
            elif s is lst:
                if not state["listening"]:
                    continue
                try:
                    c, _ = lst.accept()
                except OSError:
                    continue
                cr = struct.unpack(uid_fmt, c.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                         struct.calcsize(uid_fmt)))
                if cr[1] != os.getuid():
                    c.close()
                    continue
                conns[c.fileno()] = c
            elif s.fileno() in conns:
                try:
                    request(s)
                except OSError:  # the client went away mid-answer
                    conns.pop(s.fileno(), None)
                    s.close()
        reap()
    if state["listening"]:
        unlink_own()
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"] and len(sys.argv) == 5:
        sys.exit(serve(sys.argv[2], sys.argv[3], float(sys.argv[4])))
    sys.exit(warm() if sys.argv[1:] == ["warm"] else main())
