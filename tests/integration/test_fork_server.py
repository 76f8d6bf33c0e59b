"""The fork server (include/meshfs/convert.h, docs/architecture.md §3):
one pre-initialised meshfs-worker per parent forks a child per conversion,
ahead of time (the spare: forked and sandboxed for a source root before its
job is known).  These tests check that it is really one process for many
conversions, that every child converts exactly one model and was prepared
for that model's root, that a dead server or a dead spare is replaced on the
next conversion, that its children still obey the timeout and report a
crash with the same error texts as a directly spawned worker, and that the
outputs it hands back through open files are byte for byte what a directly
spawned worker writes."""
import os
import re
import shutil
import signal
import subprocess
import time
import unittest

from common import convert, run_tests, tempdir, tool, tree_bytes
from mount import Mount

N = 12


def make_models(src, n=N, prefix="m"):
    os.makedirs(src, exist_ok=True)
    for i in range(n):
        with open(os.path.join(src, f"{prefix}{i}.stl"), "w") as f:
            f.write("solid t\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\n"
                    f"vertex 1 0 {i}\nvertex 0 1 0\nendloop\nendfacet\nendsolid t\n")


def server_lines(stderr):
    return re.findall(r"meshfs-worker: fork server (\d+) started", stderr)


def child_lines(stderr):
    """({pid: root prepared for}, [(pid, model converted)]) from the
    children's MESHFS_WORKER_STDERR lines."""
    prepared = {int(p): r for p, r in
                re.findall(r"meshfs-worker: child (\d+) prepared for (\S+)", stderr)}
    converts = [(int(p), m) for p, m in
                re.findall(r"meshfs-worker: child (\d+) converts (\S+)", stderr)]
    return prepared, converts


def proc_status(pid):
    with open(f"/proc/{pid}/status") as f:
        return dict(l.rstrip("\n").split(":\t", 1) for l in f if ":\t" in l)


def convert_cmd(*args):
    return [tool("meshfs-convert"), "--no-cache", "-q"] + list(args)


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


def sleeping_descendant(root):
    """A process below root asleep in nanosleep: the worker in its job under
    MESHFS_TEST_WORKER_SLEEP (its sandbox entered; the tool, the server and
    a spare wait in other calls)."""
    parent = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    parent[int(d)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    for pid in parent:
        up = pid
        while up in parent and up != root:
            up = parent[up]
        if up == root and pid != root:
            try:
                with open(f"/proc/{pid}/wchan") as f:
                    if "nanosleep" in f.read():
                        return True
            except OSError:
                pass
    return False


class ConvertTest(unittest.TestCase):
    def test_one_server_for_all_conversions(self):
        with tempdir() as tmp:
            src = os.path.join(tmp, "src")
            make_models(src)
            env = dict(os.environ, MESHFS_WORKER_STDERR="1")
            p = subprocess.run([tool("meshfs-convert"), "--no-cache", "-q", "-j1", "-f", "vrt", "-o",
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
                p = subprocess.run([tool("meshfs-convert"), "--no-cache", "-q", "-j2", "-o", out, src],
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
            p = subprocess.run([tool("meshfs-convert"), "--no-cache", "-j1", "-f", "vrt", "--timeout", "1",
                                "-o", os.path.join(tmp, "out"), src],
                               capture_output=True, text=True, env=env, timeout=60)
            secs = time.monotonic() - t
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("import timed out after 1 s", p.stdout + p.stderr)
            self.assertEqual(len(server_lines(p.stderr)), 1, p.stderr)
            self.assertLess(secs, 10)

    def test_output_removed_under_the_run_is_not_remembered(self):
        # The job folder deleted while the child runs (what a stale-tmp
        # cleanup or an rm of the cache does): the format fails for this
        # run, saying why, but the model is not blamed, so the next run
        # converts it instead of repeating a remembered failure.
        with tempdir() as tmp:
            src, cache, out = (os.path.join(tmp, d) for d in ("src", "cache", "out"))
            make_models(src, 1)
            env = {k: v for k, v in os.environ.items() if k != "MESHFS_FORK_SERVER"}
            args = [tool("meshfs-convert"), "--cache-dir", cache, "-j1", "-f", "vrt", "-o", out, src]
            p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env=dict(env, MESHFS_TEST_WORKER_SLEEP="3"))
            removed = None
            deadline = time.monotonic() + 20
            while removed is None and time.monotonic() < deadline and p.poll() is None:
                tmpdir = os.path.join(cache, "tmp")
                # once the child sleeps in its job: before that, it has yet
                # to enter the folder (its sandbox), a failure of another kind
                in_job = sleeping_descendant(p.pid)
                for d in os.listdir(tmpdir) if in_job and os.path.isdir(tmpdir) else []:
                    if d.startswith("job-") and os.path.exists(os.path.join(tmpdir, d, "vrt")):
                        removed = os.path.join(tmpdir, d)
                        shutil.rmtree(removed)
                        break
                time.sleep(0.01)
            stdout, stderr = p.communicate(timeout=60)
            self.assertIsNotNone(removed, "no job folder with the parent's vrt appeared")
            self.assertEqual(p.returncode, 1, stderr)
            self.assertIn("m0.stl: vrt: the worker's output is not the file it was given "
                          "(it was removed during the run)", stdout + stderr)
            again = subprocess.run(args, capture_output=True, text=True, env=env, timeout=60)
            self.assertEqual(again.returncode, 0, again.stdout + again.stderr)
            self.assertNotIn("remembered", again.stdout + again.stderr)
            self.assertIn("1 converted, 0 up to date, 0 failed", again.stderr)
            self.assertGreater(os.path.getsize(os.path.join(out, "m0.vrt")), 0)

    def test_each_child_is_prepared_for_its_root_and_used_once(self):
        with tempdir() as tmp:
            a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
            make_models(a, 4)
            make_models(b, 4, prefix="n")
            env = dict(os.environ, MESHFS_WORKER_STDERR="1")
            p = subprocess.run(convert_cmd("-j1", "-f", "vrt", "-o", os.path.join(tmp, "out"),
                                           a, b),
                               capture_output=True, text=True, env=env, timeout=300)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(len(server_lines(p.stderr)), 1, p.stderr)
            prepared, converts = child_lines(p.stderr)
            self.assertEqual(len(converts), 8, p.stderr)
            pids = [pid for pid, _ in converts]
            self.assertEqual(len(set(pids)), 8, converts)  # never a second model
            for pid, model in converts:
                # the root it was sandboxed for (Landlock's read rule) is the model's
                root = prepared[pid]
                self.assertTrue(model.startswith(root + "/"), (pid, root, model))
                self.assertEqual(os.path.dirname(model), root)
            used_a = [pid for pid, m in converts if os.path.dirname(m) == a]
            self.assertEqual(len(used_a), 4)
            # spares made for a and never used are not handed b's models
            self.assertTrue(all(prepared[pid] == b for pid, m in converts
                                if os.path.dirname(m) == b))
            self.assertGreater(len(prepared), len(converts))  # the next one is always ready

    def test_timeout_and_crash_texts_in_every_child(self):
        """The first child is forked on demand, the later ones are spares made
        ahead: all report alike, and alike with direct spawning."""
        with tempdir() as tmp:
            src = os.path.join(tmp, "src")
            make_models(src, 3)
            texts = {}
            for mode in ("1", "0"):
                env = dict(os.environ, MESHFS_TEST_WORKER_SLEEP="30", MESHFS_WORKER_STDERR="1",
                           MESHFS_FORK_SERVER=mode)
                p = subprocess.run(convert_cmd("-j1", "-f", "vrt", "--timeout", "1", "-o",
                                               os.path.join(tmp, "t" + mode), src),
                                   capture_output=True, text=True, env=env, timeout=120)
                self.assertNotEqual(p.returncode, 0)
                texts[("sleep", mode)] = p.stdout + p.stderr
                self.assertEqual(
                    len(re.findall(r"m\d\.stl: import timed out after 1 s", p.stdout + p.stderr)),
                    3, p.stdout + p.stderr)
                if mode == "1":
                    self.assertEqual(len(child_lines(p.stderr)[1]), 3, p.stderr)
                env = dict(os.environ, MESHFS_TEST_SANDBOX_PROBE="socket", MESHFS_FORK_SERVER=mode)
                out = os.path.join(tmp, "c" + mode)
                p = subprocess.run(convert_cmd("-j1", "-f", "vrt,fmd", "-o", out, src),
                                   capture_output=True, text=True, env=env, timeout=120)
                self.assertEqual(p.returncode, 1)
                self.assertEqual(
                    len(re.findall(r"m\d\.stl: importer killed by the sandbox \(SIGSYS\): it "
                                   r"attempted a forbidden system call", p.stderr)), 3, p.stderr)
                # the files handed to the child are gone with its failure
                self.assertEqual(os.listdir(out) if os.path.isdir(out) else [], [])

    def test_spare_is_sandboxed_before_its_job(self):
        if os.geteuid() != 0:
            self.skipTest("the user switch needs root")
        with tempdir() as tmp:
            src = os.path.join(tmp, "src")
            make_models(src, 2)
            env = dict(os.environ, MESHFS_WORKER_STDERR="1", MESHFS_TEST_WORKER_SLEEP="30")
            p = subprocess.Popen(convert_cmd("-j1", "-f", "vrt", "--timeout", "20", "-o",
                                             os.path.join(tmp, "out"), src),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                 env=env)
            try:
                # while the first child sleeps in its job, the spare waits for one
                deadline = time.monotonic() + 20
                servers = []
                while time.monotonic() < deadline:
                    servers = workers_of(p.pid)
                    kids = [k for s in servers for k in workers_of(s)]
                    if len(kids) == 2 and any(proc_status(k)["Uid"].split()[0] != "0"
                                              for k in kids):
                        break
                    time.sleep(0.05)
                self.assertEqual(len(servers), 1)
                self.assertEqual(len(kids), 2, kids)
                uids = sorted(proc_status(k)["Uid"].split()[0] for k in kids)
                self.assertEqual(uids, ["0", "65534"])
                for k in kids:
                    st = proc_status(k)
                    self.assertEqual(st["NoNewPrivs"], "1")
                    self.assertEqual(st["Seccomp"], "2")
                    if st["Uid"].split()[0] == "0":
                        # the spare: its user comes with its job (the model's
                        # owner), so until then it can only switch user
                        self.assertEqual(int(st["CapEff"], 16), (1 << 6) | (1 << 7))
                        self.assertEqual(int(st["CapPrm"], 16), (1 << 6) | (1 << 7))
                    else:
                        # root's models convert as nobody, with no capability
                        self.assertEqual(st["Uid"].split(), ["65534"] * 4)
                        self.assertEqual(int(st["CapEff"], 16), 0)
                        self.assertEqual(int(st["CapPrm"], 16), 0)
            finally:
                p.kill()
                p.wait()

    def test_children_die_with_the_parent(self):
        """No lifeline thread in a child: it dies with the server
        (PR_SET_PDEATHSIG), which dies with the parent (the lifeline); the
        running child and the waiting spare alike."""
        with tempdir() as tmp:
            src = os.path.join(tmp, "src")
            make_models(src, 1)
            env = dict(os.environ, MESHFS_WORKER_STDERR="1", MESHFS_TEST_WORKER_SLEEP="60")
            p = subprocess.Popen(convert_cmd("-j1", "-f", "vrt", "--timeout", "100", "-o",
                                             os.path.join(tmp, "out"), src),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
            try:
                deadline = time.monotonic() + 20
                servers, kids = [], []
                while time.monotonic() < deadline:
                    servers = workers_of(p.pid)
                    kids = [k for s in servers for k in workers_of(s)]
                    if len(kids) == 2:
                        break
                    time.sleep(0.05)
                self.assertEqual(len(kids), 2, kids)  # the sleeping child and the spare
            finally:
                p.kill()  # nobody closes anything: only the kernel's notices remain
                p.wait()

            def alive(pid):
                try:
                    return proc_status(pid).get("State", "").split()[0] != "Z"
                except OSError:
                    return False

            deadline = time.monotonic() + 20  # well before the 60 s sleep ends
            while time.monotonic() < deadline and any(alive(x) for x in servers + kids):
                time.sleep(0.05)
            self.assertEqual([x for x in servers + kids if alive(x)], [])


class MountTest(unittest.TestCase):
    def test_server_reused_and_respawned_after_kill(self):
        with tempdir() as tmp:
            src, mnt = os.path.join(tmp, "src"), os.path.join(tmp, "mnt")
            make_models(src, N + 1)
            ref = os.path.join(tmp, "ref")
            p, _ = convert([src], ref, "-f", "vrt", report=False)
            self.assertEqual(p.returncode, 0, p.stderr)
            want = tree_bytes(ref)
            with Mount(src, mnt, os.path.join(tmp, "cache")) as m:
                def view(i):
                    with open(os.path.join(mnt, f"m{i}.vrt"), "rb") as f:
                        return f.read()

                def key(i):
                    return next(k for k in want if k.endswith(f"/m{i}.vrt") or k == f"m{i}.vrt")

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
                # a spare that dies before its job (here: killed) costs nothing
                spares = workers_of(now[0])
                self.assertEqual(len(spares), 1, spares)
                os.kill(spares[0], signal.SIGKILL)
                time.sleep(0.1)
                self.assertEqual(view(N), want[key(N)])  # a model not converted yet
                self.assertEqual(workers_of(m.proc.pid), now)
                again = workers_of(now[0])
                self.assertEqual(len(again), 1, again)
                self.assertNotEqual(again[0], spares[0])


if __name__ == "__main__":
    run_tests()
