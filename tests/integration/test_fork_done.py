"""A fork server's child says "done" before it exits (include/meshfs/convert.h,
docs/worker.md): the parent then uses its report without waiting for the
exit, but only once no output can be written any more (a read lease on
each output, refused while any descriptor, dup or mapping can still write
it).  These tests make a child misbehave after "done" (test builds:
MESHFS_TEST_AFTER_DONE) and check that:
  - a child that kept an output open, writes it after "done" and then
    crashes is judged by its exit status, as before: the crash is reported
    and no output of it is used;
  - a child that says "done" and then stays is not waited for (the view
    comes back long before it would exit) and is killed, not left behind.
The control run (no hook) shows the same models convert."""
import os
import re
import subprocess
import time
import unittest

from common import convert, run_tests, tempdir, tool, tree_bytes
from mount import Mount
from test_fork_server import convert_cmd, make_models, workers_of


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class DoneTest(unittest.TestCase):
    def run_convert(self, src, out, after=None):
        env = dict(os.environ)
        env.pop("MESHFS_FORK_SERVER", None)
        if after:
            env["MESHFS_TEST_AFTER_DONE"] = after
        return subprocess.run(convert_cmd("-j1", "-f", "vrt,fmd", "-o", out, src),
                              capture_output=True, text=True, env=env, timeout=120)

    def test_control_converts(self):
        with tempdir() as tmp:
            src, out = os.path.join(tmp, "src"), os.path.join(tmp, "out")
            make_models(src, 2)
            p = self.run_convert(src, out)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertEqual(sorted(os.listdir(out)), ["m0.fmd", "m0.vrt", "m1.fmd", "m1.vrt"])

    def test_output_written_after_done_is_judged_by_the_exit(self):
        with tempdir() as tmp:
            src, out = os.path.join(tmp, "src"), os.path.join(tmp, "out")
            make_models(src, 2)
            p = self.run_convert(src, out, "tamper")
            text = p.stdout + p.stderr
            self.assertEqual(p.returncode, 1, text)
            self.assertEqual(len(re.findall(r"m[01]\.stl: importer crashed: SIGABRT", text)), 2,
                             text)
            # nothing it wrote, before or after "done", was used
            self.assertEqual(os.listdir(out) if os.path.isdir(out) else [], [])

    def test_child_that_stays_after_done_is_not_waited_for_and_is_killed(self):
        with tempdir() as tmp:
            src, mnt = os.path.join(tmp, "src"), os.path.join(tmp, "mnt")
            make_models(src, 2)
            ref = os.path.join(tmp, "ref")
            p, _ = convert([src], ref, "-f", "vrt", report=False)
            self.assertEqual(p.returncode, 0, p.stderr)
            want = tree_bytes(ref)
            env = dict(os.environ, MESHFS_TEST_AFTER_DONE="linger")
            env.pop("MESHFS_FORK_SERVER", None)
            with Mount(src, mnt, os.path.join(tmp, "cache"), env=env) as m:
                for i in range(2):
                    t = time.monotonic()
                    with open(os.path.join(mnt, f"m{i}.vrt"), "rb") as f:
                        got = f.read()
                    # the child would stay 60 s: its exit was not waited for
                    self.assertLess(time.monotonic() - t, 20)
                    self.assertEqual(got, want[next(k for k in want if k.endswith(f"m{i}.vrt"))])
                servers = workers_of(m.proc.pid)
                self.assertEqual(len(servers), 1, servers)
                # only the next spare is left: the two that stayed were killed
                deadline = time.monotonic() + 10
                kids = workers_of(servers[0])
                while time.monotonic() < deadline and len([k for k in kids if alive(k)]) != 1:
                    time.sleep(0.05)
                    kids = workers_of(servers[0])
                self.assertEqual(len([k for k in kids if alive(k)]), 1, kids)
                self.assertTrue(m.alive())


if __name__ == "__main__":
    run_tests()
