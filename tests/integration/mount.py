"""A real meshfs mount for tests: started in the foreground as a child,
unmounted (and killed if need be) on exit, also when the test fails."""
import errno
import os
import subprocess
import time

from common import tool


SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                     "WARNING: ThreadSanitizer", "FATAL: ThreadSanitizer")


def tsan_report(pid):
    """The ThreadSanitizer report of process pid, or "".  scripts/test's
    TSan run sets TSAN_OPTIONS log_path=PREFIX (reports go to PREFIX.PID,
    not into the mount's output) and tells the tests PREFIX in
    MESHFS_TSAN_LOG."""
    prefix = os.environ.get("MESHFS_TSAN_LOG")
    if not prefix or not os.path.exists(f"{prefix}.{pid}"):
        return ""
    with open(f"{prefix}.{pid}", errors="replace") as f:
        return f.read()


def dead(path):
    """Whether path is a FUSE mount whose daemon is gone (os.path.ismount
    says no: its lstat fails with ENOTCONN)."""
    try:
        os.lstat(path)
    except OSError as e:
        return e.errno == errno.ENOTCONN
    return False


class Mount:
    def __init__(self, src, mnt, cache, *opts, env=None):
        self.src, self.mnt, self.cache = src, mnt, cache
        self.opts = list(opts)
        self.env = env
        self.proc = None
        self.log = mnt + ".log"

    def __enter__(self):
        os.makedirs(self.mnt, exist_ok=True)
        o = ["cache_dir=" + self.cache] + self.opts
        self.logf = open(self.log, "w")
        self.proc = subprocess.Popen([tool("meshfs"), "-f", "-o", ",".join(o), self.src, self.mnt],
                                     stdout=self.logf, stderr=subprocess.STDOUT, env=self.env)
        deadline = time.time() + 20
        while not os.path.ismount(self.mnt):
            if self.proc.poll() is not None or time.time() > deadline:
                self.logf.close()
                raise AssertionError("meshfs did not mount:\n" + open(self.log).read())
            time.sleep(0.02)
        return self

    def alive(self):
        return self.proc.poll() is None and os.path.ismount(self.mnt)

    def stats(self):
        raw = os.getxattr(self.mnt, "user.meshfs.stats").decode()
        return {k: int(v) for k, v in (kv.split("=") for kv in raw.split())}

    def stats_released(self):
        """The stats once the kernel has released every listing handle
        (RELEASEDIR follows closedir asynchronously); as they are after 5 s."""
        for _ in range(250):
            st = self.stats()
            if st["listing_handles"] == 0:
                break
            time.sleep(0.02)
        return st

    def output(self):
        with open(self.log, errors="replace") as f:  # hostile names are bytes
            return f.read()

    def __exit__(self, *exc):
        if os.path.ismount(self.mnt):
            subprocess.run(["fusermount3", "-u", self.mnt], capture_output=True)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            subprocess.run(["fusermount3", "-u", "-z", self.mnt], capture_output=True)
        # A daemon whose connection was aborted leaves its mount to the
        # unmount guard (src/session/unmount_guard.c), which unmounts it
        # a moment after the daemon is gone: waited for, so the test's
        # folder can be removed; then unmounted here if it is still there.
        # Not with no_auto_unmount, whose tests look at the dead mount; and
        # a live mount under this one (-o stack) is not this one's.
        if "no_auto_unmount" not in self.opts:
            deadline = time.time() + 10
            while dead(self.mnt) and time.time() < deadline:
                time.sleep(0.02)
            if dead(self.mnt):
                subprocess.run(["fusermount3", "-u", "-z", self.mnt], capture_output=True)
        self.logf.close()
        # Under ASan+UBSan (scripts/test) a report at exit, a leak above
        # all, would otherwise pass unseen: the test's own checks are over.
        if exc[0] is None:
            log = self.output()
            for marker in SANITIZER_MARKERS:
                if marker in log:
                    raise AssertionError("meshfs's sanitizer report:\n" + log[-8000:])
            report = tsan_report(self.proc.pid)
            if report:
                raise AssertionError("meshfs's ThreadSanitizer report:\n" + report[:8000])
        return False
