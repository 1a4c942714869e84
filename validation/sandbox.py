"""The walls around a candidate process: environment, limits, working dir, network, identity.

`confine()` runs first thing in a freshly forked candidate process, before any candidate code.
Each measure degrades gracefully where the OS refuses it (not root, no namespaces, a
container without CAP_SYS_ADMIN) and records what it achieved in the returned dict, which the
verdict keeps (`Verdict.timing["sandbox"]`), so a weaker sandbox is visible, never silent.

Standard library only.
"""

from __future__ import annotations

import ctypes
import os
import re
import resource
import signal
import tempfile
import time
from typing import Any

# Anything that looks like a credential, and whole families of service configuration.
_SECRET_NAME = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE", re.I)
_SECRET_PREFIX = ("GITHUB_", "GH_", "OPENAI_", "ANTHROPIC_", "HF_", "HUGGING", "AWS_", "AZURE_", "GOOGLE_", "GCP_",
                  "GCLOUD_", "AUTOTRITON_", "PREFECT_", "WANDB_", "DOCKER_", "SSH_", "GIT_", "NPM_", "PYPI_", "TWINE_",
                  "DATABASE_", "POSTGRES", "MYSQL", "REDIS", "KUBE", "VAULT_", "CI_JOB")
# What a Python/torch/triton process legitimately needs from its parent's environment.
_KEEP = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "PYTHONPATH", "PYTHONHASHSEED", "VIRTUAL_ENV", "LD_LIBRARY_PATH",
         "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "TRITON_INTERPRET", "TRITON_PTXAS_PATH", "OMP_NUM_THREADS",
         "MKL_NUM_THREADS", "NVIDIA_VISIBLE_DEVICES", "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
         "NVSHMEM_DISABLE_NVLS", "TERM")

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
NOBODY = 65534


def is_secret(name: str) -> bool:
    upper = name.upper()
    return bool(_SECRET_NAME.search(upper)) or upper.startswith(_SECRET_PREFIX)


def scrubbed_env(environ: dict[str, str] | os._Environ, extra: dict[str, str] | None = None) -> dict[str, str]:
    """Only the variables a Python process needs, never a credential (even if allowlisted by name)."""
    env = {k: v for k, v in environ.items() if (k in _KEEP or k.startswith("TRITON_")) and not is_secret(k)}
    env.update(extra or {})
    return env


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def _unshare_network() -> str:
    """Put this (single-threaded, freshly forked) process in an empty network namespace."""
    libc = _libc()
    if libc is None or not hasattr(libc, "unshare"):
        return "unavailable: no unshare()"
    if libc.unshare(CLONE_NEWNET) == 0:
        return "isolated"
    first = os.strerror(ctypes.get_errno())
    # Unprivileged: a user namespace grants CAP_SYS_ADMIN inside it, enough for a netns.
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0:
        try:  # map our ids so files we create keep a sane owner
            with open("/proc/self/setgroups", "w") as f:
                f.write("deny")
            with open("/proc/self/uid_map", "w") as f:
                f.write(f"{uid} {uid} 1")
            with open("/proc/self/gid_map", "w") as f:
                f.write(f"{gid} {gid} 1")
        except OSError:
            pass
        return "isolated (user namespace)"
    return f"not isolated: unshare refused ({first}; {os.strerror(ctypes.get_errno())})"


def _set_limit(which: int, value: int) -> bool:
    try:
        soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY and value > hard:
            value = hard
        resource.setrlimit(which, (value, hard if hard != resource.RLIM_INFINITY and hard >= value else value))
        return True
    except (ValueError, OSError):
        return False


def confine(workdir: str, *, memory_limit_bytes: int, max_file_bytes: int, max_processes: int,
            isolate_network: bool, drop_privileges: bool, keep_fds: tuple[int, ...], environ: dict[str, str]) -> dict[str, Any]:
    """Confine the calling process (a fresh fork). Returns what was achieved, measure by measure."""
    report: dict[str, Any] = {}
    times: dict[str, float] = {}
    clock = [time.monotonic()]

    def lap(name: str) -> None:
        now = time.monotonic()
        times[name] = round(now - clock[0], 6)
        clock[0] = now

    os.setsid()  # own session and process group: the worker kills the whole group at the end
    libc = _libc()
    if libc is not None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # over-long output: write() fails with EFBIG instead

    # Output: stdin empty, stdout/stderr to a capped file in the working dir (never the caller's stream).
    out_path = os.path.join(workdir, "output.txt")
    out_fd = _high(os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
    null = _high(os.open(os.devnull, os.O_RDONLY))
    os.dup2(null, 0)
    os.dup2(out_fd, 1)
    os.dup2(out_fd, 2)
    os.close(null)
    os.close(out_fd)
    os.closerange(3, 4096) if not keep_fds else _close_others(keep_fds)
    lap("session_fds_s")

    os.environ.clear()
    os.environ.update(scrubbed_env(environ, {"HOME": workdir, "TMPDIR": workdir, "TRITON_CACHE_DIR": os.path.join(workdir, ".triton"),
                                             "TRITON_HOME": workdir, "XDG_CACHE_HOME": os.path.join(workdir, ".cache")}))
    os.chdir(workdir)
    tempfile.tempdir = None  # the worker's own temporary folder is not the child's: TMPDIR (its workdir) is
    lap("environment_s")
    report["network"] = _unshare_network() if isolate_network else "not requested"
    lap("network_s")

    report["rlimit_as"] = _set_limit(resource.RLIMIT_AS, memory_limit_bytes)
    report["rlimit_fsize"] = _set_limit(resource.RLIMIT_FSIZE, max_file_bytes)
    report["rlimit_core"] = _set_limit(resource.RLIMIT_CORE, 0)
    lap("rlimits_s")

    report["privileges"] = "kept"
    blocked = _unreadable_for_others() or _gpu_not_open_to_others()
    if drop_privileges and os.geteuid() == 0 and blocked:
        report["privileges"] = f"kept: {blocked} is not open to other users, so the candidate could not run as nobody"
    elif drop_privileges and os.geteuid() == 0:
        try:
            for root, dirs, files in os.walk(workdir):
                for name in dirs + files:
                    os.chown(os.path.join(root, name), NOBODY, NOBODY)
            os.chown(workdir, NOBODY, NOBODY)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            report["privileges"] = "dropped to nobody"
        except OSError as exc:
            report["privileges"] = f"kept (could not drop: {exc.strerror})"
    # RLIMIT_NPROC counts the user's processes and binds only non-root users: a fork bomb stops here.
    report["rlimit_nproc"] = _set_limit(resource.RLIMIT_NPROC, max_processes) if os.geteuid() != 0 else False
    if libc is not None:
        libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    lap("privileges_s")
    report["times"] = times  # wall time of each measure (validation/README.md, "Where a judgement's time goes")
    return report


def _gpu_not_open_to_others() -> str | None:
    """A GPU device node that an unprivileged user could not open (then stay, or CUDA breaks)."""
    for node in ("/dev/nvidiactl", "/dev/nvidia0", "/dev/nvidia-uvm"):
        try:
            if os.path.exists(node) and (os.stat(node).st_mode & 0o006) != 0o006:
                return node
        except OSError:
            continue
    return None


def _high(fd: int) -> int:
    """Move a new descriptor above 0-2 (the template closed them, so open() may return one)."""
    import fcntl

    if fd > 2:
        return fd
    high = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return high


def _unreadable_for_others() -> str | None:
    """The first directory on the way to Python's files that other users cannot enter, if any."""
    import sys
    import sysconfig

    for target in {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"], *[p for p in sys.path if p]}:
        path = os.path.abspath(target)
        while True:
            try:
                if not os.stat(path).st_mode & 0o001:
                    return path
            except OSError:
                break
            parent = os.path.dirname(path)
            if parent == path:
                break
            path = parent
    return None


def _close_others(keep: tuple[int, ...]) -> None:
    low = 3
    for fd in sorted(set(keep)):
        if fd >= low:
            os.closerange(low, fd)
            low = fd + 1
    os.closerange(low, 65536)


def kill_group(pgid: int, timeout_s: float = 5.0) -> None:
    """SIGKILL a candidate's whole process group, repeatedly, until nobody answers (fork races) or
    `timeout_s` passes. Between tries it yields the CPU a little longer each time: on a loaded
    machine a fork bomb's children are still being created or torn down after 50 back-to-back
    tries (CI beside a harvest on 2 cores saw them outlive the verdict)."""
    deadline = time.monotonic() + timeout_s
    pause = 0.0005
    while True:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            return
        if not _group_alive(pgid) or time.monotonic() > deadline:
            return
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def _group_alive(pgid: int) -> bool:
    try:
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    stat = f.read()
            except OSError:
                continue
            fields = stat[stat.rfind(b")") + 2:].split()
            if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != b"Z":
                return True
    except OSError:
        return False
    return False
