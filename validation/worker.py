"""A warm judge worker: `python -m autotriton.validation.worker` (started by JudgePool, not by hand).

Process tree, per worker:

    caller (JudgePool)                      never imports or runs candidate code
      └─ worker (this module)               torch + triton imported once; holds reference
           │                                models, inputs and outputs; compares
           └─ template ("zygote")           forked right after the imports, BEFORE any job,
                │                           CUDA never initialised, holds nothing of any job
                └─ candidate process        forked per candidate, confined (sandbox.py), gets
                                            candidate source + inputs, returns outputs + logs

Forking every candidate from the template gives a warm start (imports already paid) without
inheriting anything: the reference outputs live only in the worker, and CUDA (which does not
survive fork) is only ever initialised in the worker and in the candidate itself.

Protocol with the caller: length-prefixed pickles on the worker's fd 0 (requests) and on a
private duplicate of fd 1 (answers); the worker's own fd 1 is pointed at stderr so prints from
reference code cannot corrupt the channel. Imports: torch, triton, numpy, stdlib and autotriton's
records/hashing/validation only.
"""

from __future__ import annotations

import getpass
import json
import os
import platform
import re
import shutil
import signal
import socket
import sys
import tempfile
import time
import traceback
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

@dataclass
class Spawned:
    """A forked, confined process as the worker holds it."""

    pid: int
    sock: socket.socket
    workdir: str
    requested: float  # when the worker asked the template for it (monotonic)


class TemplateDied(SystemExit):
    """The clean template is gone; it cannot be re-forked from a worker that holds references."""


# ---------------------------------------------------------------------------------------------
# the template process


def _zygote_loop(zsock: socket.socket) -> None:
    statuses: OrderedDict[int, int] = OrderedDict()
    guard = _template_guard()

    def reap(_signum, _frame):
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            statuses[pid] = status
            while len(statuses) > 1024:
                statuses.popitem(last=False)

    signal.signal(signal.SIGCHLD, reap)
    while True:
        try:
            msg, fds, _flags, _addr = socket.recv_fds(zsock, 65536, 4)
        except InterruptedError:
            continue
        if not msg:
            os._exit(0)
        req = json.loads(msg)
        if req["op"] == "status":
            for fd in fds:
                os.close(fd)
            reap(None, None)
            st = statuses.pop(req["pid"], None)
            zsock.send(json.dumps({"status": st}).encode())
            continue
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            try:
                zsock.close()
                _child_main(fds[0], req, guard)
            except BaseException:  # noqa: BLE001 (lands in the candidate's output file, shown with the crash)
                traceback.print_exc()
                sys.stderr.flush()
            os._exit(0)
        for fd in fds:
            os.close(fd)
        zsock.send(json.dumps({"pid": pid}).encode())


def _template_guard() -> Any:
    """Paid once per worker, inherited by every candidate: the dispatcher-level compute guard
    (validation/dispatch_guard.py) and the candidate runner's hooks and watches. The guard's handle
    is held in this process's locals only (never in a module a candidate can look up)."""
    from autotriton.validation import candidate_runner, dispatch_guard

    try:
        guard = dispatch_guard.install(candidate_runner.ALLOWED_ATEN_OPS)
    except Exception:  # noqa: BLE001 (the Python-key recorder still watches; the verdict says the guard is missing)
        traceback.print_exc()
        guard = None
    try:
        candidate_runner.install_launch_hooks()
        candidate_runner.install_escape_watch()
    except Exception:  # noqa: BLE001 (run_job installs them itself)
        traceback.print_exc()
    return guard


def _child_main(fd: int, req: dict[str, Any], guard: Any = None) -> None:
    started = time.monotonic()  # CLOCK_MONOTONIC is system-wide: the worker compares it with its spawn request
    template = os.getppid()
    # The worker ran torch CPU ops with an OpenMP pool (warm-up, OMP_NUM_THREADS > 1) before
    # forking the template; that pool does not survive fork, and the first parallel CPU op of
    # a child (e.g. load_state_dict copying a weight over ATen's grain size) waits on it
    # forever. One thread: ATen runs parallel_for inline. (Run D's eleven L1 "hangs" on the
    # H200 were this, in load_state_dict, before any candidate kernel ran.)
    import torch

    torch.set_num_threads(1)
    from autotriton.validation import sandbox, wire

    import fcntl

    high = fcntl.fcntl(fd, fcntl.F_DUPFD, 100)  # the template closed 0/1, so fd may be one that confine() redirects
    if high != fd:
        os.close(fd)
    fd = high
    # The problem's dependency environment, after the judge's own paths, BEFORE confine(): the
    # sandbox keeps its privileges when a folder on sys.path is not readable by others.
    from autotriton.site_paths import add_environment

    add_environment(req.get("env_paths") or [])
    environ = dict(os.environ)
    report = sandbox.confine(req["workdir"], memory_limit_bytes=req["memory_limit_bytes"], max_file_bytes=req["max_file_bytes"],
                             max_processes=req["max_processes"], isolate_network=req["isolate_network"],
                             drop_privileges=req["drop_privileges"], keep_fds=(fd,), environ=environ)
    if os.getppid() != template:
        os._exit(0)  # the template died before confine() tied this process's life to it: nobody waits for us
    confined = time.monotonic()
    # What the candidate process itself spent where (validation/README.md, "Where a judgement's time goes").
    phases: dict[str, Any] = {"started_at": started, "confine_s": confined - started}
    sock = socket.socket(fileno=fd)
    if req.get("spare"):
        # A spare (Worker.spawn): on CUDA, create this process's CUDA context now, before any
        # candidate code exists here; then say "ready" with one byte and wait for a job.
        if req.get("warm_cuda"):
            phases["cuda_warm_error"] = _warm_cuda()
            phases["cuda_warm_s"] = time.monotonic() - confined
        sock.sendall(b"R")
        confined = time.monotonic()
    if req["mode"] == "candidate":
        from autotriton.validation import candidate_runner

        job = wire.recv_job(sock)
        # An answer too big for a frame goes into the worker's answer file (wire.answer_file).
        answer_fd = wire.recv_fd(sock) if job.get(wire.ANSWER_SHM_KEY) else None
        received = time.monotonic()
        phases["recv_job_s"] = received - confined  # waiting for the worker's job (its problem phase) + reading it
        original_compile = candidate_runner._compile

        def timed_compile(*args: Any, **kwargs: Any) -> dict[str, Any]:
            t = time.monotonic()
            try:
                return original_compile(*args, **kwargs)
            finally:
                phases["compile_check_s"] = time.monotonic() - t

        candidate_runner._compile = timed_compile  # the judge's own function, wrapped before any candidate code runs
        if job.get("watchdog_s"):
            # Shortly before the judge's deadline, write every thread's Python stack to the
            # candidate's output: a timeout verdict then says where the candidate was stuck.
            import faulthandler

            faulthandler.dump_traceback_later(job["watchdog_s"], exit=False)
        try:
            def fetch_inputs(index: int) -> Any:
                # Trial inputs are asked for only after the phase's ModelNew.__init__ returned.
                wire.send_frame(sock, b"INPUTS %d" % index)
                return wire.recv_job(sock)

            header, tensors = candidate_runner.run_job(job, guard=guard, fetch_inputs=fetch_inputs)
        except BaseException as exc:  # noqa: BLE001
            header, tensors = {"phases": [], "error": candidate_runner._error("harness", exc)}, []
        phases["run_s"] = time.monotonic() - received
        header["sandbox"] = report
        header["child_phases"] = phases
        try:
            parts = wire.encode_tensor_parts(header, tensors)  # views of the output tensors, not copies
        except BaseException as exc:  # noqa: BLE001
            parts = wire.encode_tensor_parts({"phases": [], "sandbox": report, "error": candidate_runner._error("outputs", exc)}, [])
        size = wire.payload_size(parts)
        if size > req["max_output_bytes"] and answer_fd is not None:
            try:
                parts = wire.encode_tensor_parts({"answer_shm": wire.write_parts_to_file(answer_fd, parts)}, [])
            except (wire.WireError, OSError) as exc:
                parts = wire.encode_tensor_parts({"phases": [], "sandbox": report, "error": {
                    "stage": "outputs", "type": "OutputTooLarge", "message": str(exc)}}, [])
        elif size > req["max_output_bytes"]:
            parts = wire.encode_tensor_parts({"phases": [], "sandbox": report, "error": {
                "stage": "outputs", "type": "OutputTooLarge",
                "message": f"outputs are {size} bytes, over the limit of {req['max_output_bytes']}"}}, [])
        wire.send_parts(sock, parts)
    else:
        from autotriton.validation import probe

        job = wire.recv_pickle(sock)
        result = probe.run_probe(job)
        result["sandbox"] = report
        wire.send_frame(sock, json.dumps(result, default=str).encode())
    sock.close()


def _warm_cuda() -> str | None:
    """Create the CUDA context of a spare candidate process (judge code, before any candidate
    code arrives). None when done, else why not (the candidate then starts CUDA itself)."""
    try:
        import torch

        torch.cuda.init()
        torch.empty(1, device="cuda")
        torch.cuda.synchronize()
        return None
    except Exception as exc:  # noqa: BLE001
        return f"{type(exc).__name__}: {exc}"[:300]


# ---------------------------------------------------------------------------------------------
# the worker


def build_driver_seed(directory: str, library_dirs: list[str] | None = None, libraries: list[str] | None = None) -> str:
    """A Triton cache directory holding the CUDA driver's `cuda_utils` extension, built once per
    worker, copied into every candidate's (fresh, private) TRITON_CACHE_DIR: otherwise each
    candidate runs gcc on Triton's driver.c before its first launch. Built from Triton's own
    source by the worker (never by candidate code), at the path Triton's
    `compile_module_from_src` looks it up (the seed is simply unused if that ever differs: the
    candidate builds its own). Compiling and linking only: nothing is loaded, CUDA untouched.
    Also caches `libcuda_dirs()` (an `ldconfig -p` run per process) for the template to inherit."""
    import hashlib
    import sysconfig
    from pathlib import Path

    from triton.backends.nvidia import driver as nv
    from triton.runtime.build import _build, platform_key
    from triton.runtime.cache import _base32

    libs = nv.library_dirs() if library_dirs is None else library_dirs
    src = Path(nv.dirname, "driver.c").read_text()
    key = _base32(hashlib.sha256((src + platform_key()).encode("utf-8")).hexdigest())
    seed = os.path.join(directory, "triton-seed")
    build = tempfile.mkdtemp(prefix="cuda-utils-", dir=directory)
    try:
        src_path = os.path.join(build, "cuda_utils.c")
        with open(src_path, "w") as f:
            f.write(src)
        so = _build("cuda_utils", src_path, build, libs, nv.include_dirs, nv.libraries if libraries is None else libraries, [])
        os.makedirs(os.path.join(seed, key), exist_ok=True)
        shutil.copyfile(so, os.path.join(seed, key, "cuda_utils" + sysconfig.get_config_var("EXT_SUFFIX")))
    finally:
        shutil.rmtree(build, ignore_errors=True)
    return seed

class Worker:
    def __init__(self, close_in_template: tuple[int, ...] = ()) -> None:
        import torch  # noqa: F401  (warm imports, inherited by the template)
        import triton  # noqa: F401
        import triton.language  # noqa: F401

        from autotriton.validation import candidate_runner, compile_check, probe, timing, wire  # noqa: F401  (the template inherits them: run_job preloads both)

        if os.environ.get("TRITON_INTERPRET") == "1":
            import triton.runtime.interpreter  # noqa: F401
        self.tmp = tempfile.mkdtemp(prefix="autotriton-judge-")
        os.chmod(self.tmp, 0o755)
        # Problems' leftover temporary files (torch_geometric's generated modules) go with this worker's
        # folder; Inductor's shared cache stays at its default; a sandboxed child takes its own (sandbox.py).
        user = re.sub(r'[\\/:*?"<>|]', "_", getpass.getuser())
        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(tempfile.gettempdir(), f"torchinductor_{user}"))
        tempfile.tempdir = self.tmp
        from autotriton.validation.warmup import warm_compiler, warm_up

        try:
            warm_up(self.tmp)
        except Exception:  # noqa: BLE001 (a cold start is slower, not wrong)
            traceback.print_exc()
        try:
            warm_compiler(self.tmp)
        except Exception:  # noqa: BLE001
            traceback.print_exc()
        self.triton_seed: str | None = None
        if os.environ.get("TRITON_INTERPRET") != "1":
            try:
                self.triton_seed = build_driver_seed(self.tmp)
            except Exception:  # noqa: BLE001 (no GPU toolchain here: each candidate builds its own, as before)
                self.triton_seed = None
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            parent.close()
            for fd in (0, 1, *close_in_template):
                try:
                    os.close(fd)
                except OSError:
                    pass
            _zygote_loop(child)
            os._exit(0)
        child.close()
        self.zygote_pid = pid
        self.zsock = parent
        self.problems: OrderedDict[str, Any] = OrderedDict()
        self.reference_timing: dict[str, Any] = {}
        # One spare candidate process on CUDA: forked, confined and with its CUDA context made
        # while the previous candidate runs (see spawn).
        self._template_dead = False
        self.spare: tuple[dict[str, Any], Spawned] | None = None  # (the request it was made for, the process)

    # -- candidate processes --------------------------------------------------------------------

    SPARE_READY_TIMEOUT_S = 60.0

    def spawn(self, mode: str, cfg: dict[str, Any]) -> Spawned:
        """A fresh, confined process for one candidate (or probe). Candidates come from a spare
        made ahead of time (config `spare_candidates`), which matters on CUDA: creating a CUDA
        context costs ~0.5 s alone and the driver serialises it across processes (~4 per second
        per H200, benchmarks/RESULTS.md), so each candidate's process is forked and has its
        context before its job exists, while the worker judges the one before. Isolation is
        unchanged: one process per candidate, and nothing of any candidate ever runs before the
        spare is handed its job."""
        if not self.template_alive():
            self.drop_spare()  # its template's death killed it (PR_SET_PDEATHSIG), or soon will
            raise TemplateDied("the candidate template process died; this worker must be replaced")
        if mode != "candidate" or not cfg.get("spare_candidates", True):
            got = self._spawn(self._request(mode, cfg))
        else:
            req = self._request(mode, cfg, spare=True)
            got = self._take_spare(req)
            if got is None:
                got = self._spawn(req)
                self._wait_warm(got)
            try:
                self.spare = (req, self._spawn(req))
            except TemplateDied:
                self.spare = None
        return got  # its `requested` time is what the judge's candidate_fork_s is measured from

    def template_alive(self) -> bool:
        """False once the template has exited (a candidate may kill its parent); it is reaped here."""
        if self._template_dead:
            return False
        try:
            pid, _status = os.waitpid(self.zygote_pid, os.WNOHANG)
        except ChildProcessError:
            pid = self.zygote_pid
        self._template_dead = pid == self.zygote_pid
        return not self._template_dead

    def _take_spare(self, req: dict[str, Any]) -> Spawned | None:
        """The spare, if it was made for this very request and is alive and ready; else None."""
        spare, self.spare = self.spare, None
        if spare is None:
            return None
        made_for, got = spare
        if made_for != req or not self._wait_warm(got):
            self.finish(got.pid, got.sock, got.workdir)
            return None
        return got

    def _wait_warm(self, got: Spawned) -> bool:
        """The spare's one-byte 'ready'. False (spare unusable) on EOF or timeout."""
        sock = got.sock
        sock.settimeout(self.SPARE_READY_TIMEOUT_S)
        try:
            ok = sock.recv(1) == b"R"
            if ok:  # its "ready" may have been sent long ago: is it still there (EOF once it exited)?
                sock.setblocking(False)
                try:
                    ok = sock.recv(1, socket.MSG_PEEK) != b""
                except BlockingIOError:
                    ok = True
        except OSError:
            ok = False
        finally:
            sock.settimeout(None)
        return ok

    def drop_spare(self) -> None:
        if self.spare is not None:
            _req, got = self.spare
            self.spare = None
            self.finish(got.pid, got.sock, got.workdir)

    @staticmethod
    def _request(mode: str, cfg: dict[str, Any], spare: bool = False) -> dict[str, Any]:
        """What the template needs to fork and confine one process (its working dir comes later)."""
        cpu = cfg["device"] == "cpu"
        return {"op": "spawn", "mode": mode,
                "memory_limit_bytes": int((cfg["memory_limit_gb_cpu"] if cpu else cfg["memory_limit_gb"]) * 2**30),
                "max_output_bytes": int(cfg["max_output_mb"] * 2**20), "max_file_bytes": int(cfg["max_log_mb"] * 2**20),
                "max_processes": cfg["max_processes"], "isolate_network": cfg["isolate_network"],
                "drop_privileges": cfg["drop_privileges"], "spare": spare, "warm_cuda": spare and not cpu,
                "env_paths": list(cfg.get("env_paths") or [])}

    def _spawn(self, req: dict[str, Any]) -> Spawned:
        workdir = tempfile.mkdtemp(prefix=f"{req['mode']}-", dir=self.tmp)
        os.chmod(workdir, 0o700)
        if self.triton_seed is not None:  # a private copy per candidate: nothing it writes reaches the next one
            shutil.copytree(self.triton_seed, os.path.join(workdir, ".triton"))
        ours, theirs = socket.socketpair()
        requested = time.monotonic()
        try:
            socket.send_fds(self.zsock, [json.dumps(dict(req, workdir=workdir)).encode()], [theirs.fileno()])
            answer = self.zsock.recv(65536)
        except OSError:
            answer = b""
        finally:
            theirs.close()
        if not answer:
            shutil.rmtree(workdir, ignore_errors=True)
            raise TemplateDied("the candidate template process died; this worker must be replaced")
        return Spawned(json.loads(answer)["pid"], ours, workdir, requested)

    def exit_status(self, pid: int) -> str | None:
        from autotriton.validation import sandbox

        sandbox.kill_group(pid)
        for _ in range(50):
            try:
                socket.send_fds(self.zsock, [json.dumps({"op": "status", "pid": pid}).encode()], [])
                answer = self.zsock.recv(65536)
            except OSError:
                answer = b""
            if not answer:  # the template is gone (and with it what it knew of the candidate)
                self._template_dead = True
                return "its template process died with it"
            st = json.loads(answer)["status"]
            if st is not None:
                if os.WIFSIGNALED(st):
                    sig = os.WTERMSIG(st)
                    try:
                        return f"killed by signal {signal.Signals(sig).name}"
                    except ValueError:
                        return f"killed by signal {sig}"
                return f"exited with code {os.WEXITSTATUS(st)}"
            time.sleep(0.01)
        return None

    @staticmethod
    def output_tail(workdir: str, n: int = 2000) -> str:
        try:
            with open(os.path.join(workdir, "output.txt"), "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - n))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def finish(self, pid: int, sock: socket.socket, workdir: str) -> None:
        from autotriton.validation import sandbox

        sandbox.kill_group(pid)
        sock.close()
        shutil.rmtree(workdir, ignore_errors=True)

    # -- requests ---------------------------------------------------------------------------------

    def handle(self, request: dict[str, Any]) -> Any:
        op = request["op"]
        if op == "ping":
            return {"pid": os.getpid(), "zygote": self.zygote_pid, "spare": self.spare[1].pid if self.spare else None,
                    "versions": versions()}
        if op == "footprint":  # bytes of one run at the problem's own sizes, on the meta device
            from autotriton.validation.trial_budget import footprint

            with environment_on_path([str(p) for p in request.get("env_paths") or []]):
                return footprint(request["problem_source"], self.tmp)
        if op in ("validate", "probe"):
            # The problem's dependency environment (autotriton/environments.py), for this request
            # only: here while the reference loads and runs, and in the process spawned for it.
            env_paths = [str(p) for p in request.get("env_paths") or []]
            cfg = dict(request["config"], env_paths=env_paths)
            with environment_on_path(env_paths):
                if op == "validate":
                    from autotriton.validation.judge import judge_retrying

                    try:
                        return judge_retrying(self, request["problem_source"], request["candidate_source"], cfg)
                    finally:
                        _release_gpu_cache(cfg)
                from autotriton.validation.probe import probe_in_sandbox

                return probe_in_sandbox(self, request["problem_source"], cfg)
        raise ValueError(f"unknown request {op!r}")


def _release_gpu_cache(cfg: dict[str, Any]) -> None:
    """Give the memory this job's reference runs cached back to the GPU: batches distilled side by
    side reserve GPU memory per problem (distillation/gpu_memory.py), which a worker's allocator
    keeping a finished problem's blocks would make a fiction."""
    if cfg.get("device", "cpu") == "cpu":
        return
    import torch

    if torch.cuda.is_initialized():
        torch.cuda.empty_cache()


class environment_on_path:
    """Append a problem's environment folders to sys.path AFTER the judge's own (torch, triton and
    numpy stay the judge's), and take them away afterwards together with the modules imported
    from them, so the next problem (another environment, or none) cannot import them by accident.
    Objects already made from them (a cached reference model) keep working."""

    def __init__(self, paths: list[str]):
        self.paths = list(paths)

    def __enter__(self) -> None:
        from autotriton.site_paths import add_environment

        self.paths = add_environment(self.paths)

    def __exit__(self, *exc: Any) -> None:
        if not self.paths:
            return
        for p in self.paths:
            while p in sys.path:
                sys.path.remove(p)
        prefixes = tuple(os.path.join(p, "") for p in self.paths)
        for name, module in list(sys.modules.items()):
            where = getattr(module, "__file__", None) or ""
            if where.startswith(prefixes):
                sys.modules.pop(name, None)
        import importlib

        importlib.invalidate_caches()


def versions() -> dict[str, str]:
    import torch
    import triton

    out = {"python": platform.python_version(), "torch": torch.__version__, "triton": triton.__version__}
    if os.environ.get("TRITON_INTERPRET") == "1":
        out["triton_mode"] = "interpreter"
    return out


def main() -> None:
    from autotriton.validation import wire

    req_fd = os.dup(0)
    ans_fd = os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)  # prints from reference code go to the worker log, never into the protocol
    os.set_inheritable(req_fd, False)
    os.set_inheritable(ans_fd, False)
    worker = Worker(close_in_template=(req_fd, ans_fd))  # the template never holds the caller's channels
    wire.send_pickle(ans_fd, {"ready": True, "pid": os.getpid(), "versions": versions()})
    while True:
        try:
            request = wire.recv_pickle(req_fd)
        except EOFError:
            break
        try:
            answer = {"ok": True, "result": worker.handle(request)}
        except SystemExit as exc:
            # Nothing of the job ran in a candidate yet when the template died: the pool may retry it.
            wire.send_pickle(ans_fd, {"ok": False, "error": f"worker stopping: {exc}", "fatal": True,
                                      "retry": isinstance(exc, TemplateDied)})
            break
        except BaseException as exc:  # noqa: BLE001
            answer = {"ok": False, "error": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:]}
        wire.send_pickle(ans_fd, answer)
    worker.drop_spare()
    try:
        worker.zsock.close()
    except OSError:
        pass
    shutil.rmtree(worker.tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
