"""The fork server (include/meshfs/fork_server.h, docs/architecture.md §3):
one pre-initialised meshfs-worker per parent forks a child per conversion.
These tests check that it is really one process for many conversions, that
a dead server is replaced on the next conversion, that its children still
obey the timeout with the same error text, and that it converts exactly
what a directly spawned worker converts."""
import os
import re
import signal
import subprocess
import time
import unittest

from common import convert, run_tests, tempdir, tool, tree_bytes
from mount import Mount

N = 12


def make_models(src, n=N):
    os.makedirs(src, exist_ok=True)
    for i in range(n):
        with open(os.path.join(src, f"m{i}.stl"), "w") as f:
            f.write("solid t\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\n"
                    f"vertex 1 0 {i}\nvertex 0 1 0\nendloop\nendfacet\nendsolid t\n")


def server_lines(stderr):
    return re.findall(r"meshfs-worker: fork server (\d+) started", stderr)


def workers_of(pid):
    """meshfs-worker processes whose parent is pid (through /proc)."""
    exe = os.path.realpath(tool("meshfs-worker"))
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid == pid and os.readlink(f"/proc/{p}/exe") == exe:
                out.append(int(p))
        except OSError:
            continue
    return out


class ConvertTest(unittest.TestCase):
    def test_one_server_for_all_conversions(self):
        with tempdir() as tmp:
            src = os.path.join(tmp, "src")
            make_models(src)
            env = dict(os.environ, MESHFS_WORKER_STDERR="1")
            p = subprocess.run([tool("meshfs-convert"), "-q", "-j1", "-f", "vrt", "-o",
                                os.path.join(tmp, "out"), src],
                               capture_output=True, text=True, env=env, timeout=300)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(len(server_lines(p.stderr)), 1, p.stderr)
            self.assertEqual(len(tree_bytes(os.path.join(tmp, "out"))), N)

    def test_same_bytes_as_direct_spawn(self):
        with tempdir() as tmp:
            src = os.path.join(tmp, "src")
            make_models(src)
            outs = {}
            for mode in ("1", "0"):
                env = dict(os.environ, MESHFS_FORK_SERVER=mode, MESHFS_WORKER_STDERR="1")
                out = os.path.join(tmp, "out" + mode)
                p = subprocess.run([tool("meshfs-convert"), "-q", "-j2", "-o", out, src],
                                   capture_output=True, text=True, env=env, timeout=300)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(len(server_lines(p.stderr)), 1 if mode == "1" else 0, p.stderr)
                outs[mode] = tree_bytes(out)
            self.assertGreater(len(outs["1"]), N)
            self.assertEqual(outs["1"], outs["0"])

    def test_hanging_child_times_out_with_the_same_text(self):
        with tempdir() as tmp:
            src = os.path.join(tmp, "src")
            make_models(src, 1)
            env = dict(os.environ, MESHFS_TEST_WORKER_SLEEP="30", MESHFS_WORKER_STDERR="1")
            t = time.monotonic()
            p = subprocess.run([tool("meshfs-convert"), "-j1", "-f", "vrt", "--timeout", "1",
                                "-o", os.path.join(tmp, "out"), src],
                               capture_output=True, text=True, env=env, timeout=60)
            secs = time.monotonic() - t
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("import timed out after 1 s", p.stdout + p.stderr)
            self.assertEqual(len(server_lines(p.stderr)), 1, p.stderr)
            self.assertLess(secs, 10)


class MountTest(unittest.TestCase):
    def test_server_reused_and_respawned_after_kill(self):
        with tempdir() as tmp:
            src, mnt = os.path.join(tmp, "src"), os.path.join(tmp, "mnt")
            make_models(src)
            ref = os.path.join(tmp, "ref")
            p, _ = convert([src], ref, "-f", "vrt", report=False)
            self.assertEqual(p.returncode, 0, p.stderr)
            want = tree_bytes(ref)
            with Mount(src, mnt, os.path.join(tmp, "cache")) as m:
                def view(i):
                    with open(os.path.join(mnt, f"m{i}.vrt"), "rb") as f:
                        return f.read()

                def key(i):
                    return next(k for k in want if k.endswith(f"m{i}.vrt"))

                servers = set()
                for i in range(N // 2):
                    self.assertEqual(view(i), want[key(i)])
                    servers.update(workers_of(m.proc.pid))
                self.assertEqual(len(servers), 1, servers)  # one server, N/2 conversions
                old = servers.pop()
                os.kill(old, signal.SIGKILL)
                time.sleep(0.1)
                for i in range(N // 2, N):
                    self.assertEqual(view(i), want[key(i)])  # respawned transparently
                now = workers_of(m.proc.pid)
                self.assertEqual(len(now), 1, now)
                self.assertNotEqual(now[0], old)
                self.assertTrue(m.alive())


if __name__ == "__main__":
    run_tests()
