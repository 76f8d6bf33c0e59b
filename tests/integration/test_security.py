"""Security (docs/security.md): the worker sandbox (S4), the mount's nosuid
and nodev (S5), the descriptor limit (S6) and the cache directory's trust
(S3, end to end; the unit cases are in tests/unit/test_cache.c).

Most of it needs root (user switching, allow_other mounts, test users); the
escape probes need a worker built with -Dtest_hooks=true.  Test users are
created with unique names and removed at the end."""
import errno
import os
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

from common import SOURCE, convert, run, tool
from mount import Mount

EXAMPLES = os.path.join(SOURCE, "examples", "assets")
IS_ROOT = os.geteuid() == 0


def sandbox_status():
    p = run([tool("meshfs-worker"), "--sandbox-status"], check=True)
    return dict(l.split(": ", 1) for l in p.stdout.splitlines() if ": " in l)


STATUS = sandbox_status()
HOOKS = STATUS.get("test hooks") == "yes"
LANDLOCK_ABI = int(STATUS["landlock"].split()[1]) if STATUS["landlock"].startswith("abi") else 0
SANITIZED = STATUS.get("sanitizer build") == "yes"


# ---- test users -------------------------------------------------------------

_users = []


def make_user(tag):
    """A fresh unprivileged user; (name, uid, gid)."""
    name = f"mfs{tag}{os.getpid() % 100000}"
    subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin",
                    "--user-group", name], check=True, capture_output=True)
    _users.append(name)
    import pwd
    pw = pwd.getpwnam(name)
    return name, pw.pw_uid, pw.pw_gid


def tearDownModule():
    for name in _users:
        # -f: even if a process of the user (a stuck worker) is still alive
        subprocess.run(["userdel", "-f", name], capture_output=True)
    for name in _groups:
        subprocess.run(["groupdel", name], capture_output=True)


def as_user(uid, gid, args, **kw):
    """args run as uid/gid with no supplementary groups."""
    return ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--"] + list(args)


def open_tmp():
    """A temporary folder other users can traverse (the mount and SRC are
    read by test users)."""
    t = tempfile.TemporaryDirectory(prefix="meshfs-sec-")
    os.chmod(t.name, 0o755)
    return t


# ---- S4: the worker sandbox -------------------------------------------------

class SandboxStatusTest(unittest.TestCase):
    def test_status_lists_every_layer(self):
        for key in ("landlock", "seccomp", "no_new_privs", "user switch", "namespaces"):
            self.assertIn(key, STATUS)
        self.assertTrue(STATUS["seccomp"].startswith("yes (libseccomp "), STATUS["seccomp"])
        self.assertRegex(STATUS["landlock"], r"^(abi \d+|unsupported \(.*\))$")


@unittest.skipUnless(IS_ROOT, "needs root: the worker switches user only when root")
@unittest.skipUnless(HOOKS, "worker built without -Dtest_hooks=true")
class ProbeTest(unittest.TestCase):
    """The worker, exactly as the parent starts it, attempts each escape
    from inside its sandbox."""

    @classmethod
    def setUpClass(cls):
        cls._tmp = open_tmp()
        cls.tmp = cls._tmp.name
        cls.src = os.path.join(cls.tmp, "src")
        shutil.copytree(EXAMPLES, cls.src)
        cls.outside = os.path.join(cls.tmp, "outside.txt")
        with open(cls.outside, "w") as f:
            f.write("not the worker's\n")
        os.chmod(cls.outside, 0o644)
        cls.user, cls.uid, cls.gid = make_user("w")

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def worker(self, probe, user_args=True, prefix=(), outdir=None):
        out = outdir or tempfile.mkdtemp(dir=self.tmp)
        args = list(prefix) + [tool("meshfs-worker"), "--root", self.src, "--model", "crate/crate.obj",
                               "--outdir", out, "--formats", "fmd"]
        if user_args:
            args += ["--uid", str(self.uid), "--gid", str(self.gid)]
            if user_args == "groups":
                args += ["--groups", f"{self.gid},4242"]
        env = dict(os.environ, MESHFS_TEST_SANDBOX_PROBE=probe)
        p = subprocess.run(args, capture_output=True, text=True, env=env, timeout=60)
        return p, out

    def lines(self, p):
        return dict(l.split(": ", 1) for l in p.stdout.splitlines() if l.startswith("probe "))

    def test_identity(self):
        p, _ = self.worker("whoami")
        self.assertEqual(p.returncode, 0, p.stderr)
        who = dict(kv.split("=", 1) for kv in self.lines(p)["probe whoami"].split())
        self.assertEqual(who["uid"], f"{self.uid},{self.uid},{self.uid}")
        self.assertEqual(who["gid"], f"{self.gid},{self.gid},{self.gid}")
        self.assertEqual(who["groups"], "0")
        # no capability at all: no CAP_DAC_READ_SEARCH either (issue 33)
        self.assertEqual(who["capeff"], "0")
        self.assertEqual(who["capprm"], "0")
        self.assertEqual(who["nnp"], "1")
        self.assertEqual(who["seccomp"], "2")  # SECCOMP_MODE_FILTER
        if not SANITIZED:
            self.assertEqual(who["dumpable"], "0")
        self.assertNotEqual(who["netns"], os.readlink("/proc/self/ns/net"))

    def test_supplementary_groups_are_taken(self):
        p, _ = self.worker("whoami", user_args="groups")
        self.assertEqual(p.returncode, 0, p.stderr)
        who = dict(kv.split("=", 1) for kv in self.lines(p)["probe whoami"].split())
        self.assertEqual(who["groups"], "2")
        self.assertEqual(who["capeff"], "0")

    def test_default_user_is_nobody(self):
        import pwd
        nobody = pwd.getpwnam("nobody")
        p, _ = self.worker("whoami", user_args=False)
        who = dict(kv.split("=", 1) for kv in self.lines(p)["probe whoami"].split())
        self.assertEqual(who["uid"], f"{nobody.pw_uid},{nobody.pw_uid},{nobody.pw_uid}")

    @unittest.skipUnless(LANDLOCK_ABI, "kernel without Landlock")
    def test_files_outside_are_refused(self):
        model = os.path.join(self.src, "crate", "crate.obj")
        escape = os.path.join(self.tmp, "escaped.txt")
        p, out = self.worker(f"read={model},read={self.outside},read=/etc/shadow,"
                             f"write={escape},write={self.src}/planted,write=inside")
        got = self.lines(p)
        self.assertEqual(got[f"probe read {model}"], "allowed")  # the control
        self.assertEqual(got[f"probe read {self.outside}"], "denied EACCES")
        self.assertEqual(got["probe read /etc/shadow"], "denied EACCES")
        self.assertEqual(got[f"probe write {escape}"], "denied EACCES")
        self.assertEqual(got[f"probe write {self.src}/planted"], "denied EACCES")
        self.assertEqual(got["probe write inside"], "allowed")  # its own output dir
        self.assertFalse(os.path.exists(escape))
        self.assertFalse(os.path.exists(os.path.join(self.src, "planted")))
        # written as the worker user, in its own subdirectory of the parent's
        st = os.stat(os.path.join(out, "w", "inside"))
        self.assertEqual((st.st_uid, st.st_gid), (self.uid, self.gid))
        self.assertEqual(os.stat(out).st_uid, 0)

    def test_no_way_back_to_root(self):
        p, _ = self.worker("setuid")
        self.assertEqual(self.lines(p)["probe setuid"], "denied EPERM")

    @unittest.skipUnless(LANDLOCK_ABI >= 6, "Landlock signal scoping needs ABI 6")
    def test_no_signals_outside(self):
        p, _ = self.worker("kill-parent")
        self.assertEqual(self.lines(p)["probe kill-parent"], "denied EPERM")

    def test_forbidden_syscalls_kill(self):
        for action in ("execve", "socket", "ptrace", "mount", "unshare", "fork"):
            with self.subTest(action=action):
                if SANITIZED and action in ("ptrace", "fork"):
                    continue  # the sanitizer runtime needs them (docs/security.md)
                p, _ = self.worker(action)
                if SANITIZED and action == "execve":
                    self.assertEqual(self.lines(p)["probe execve"], "denied EPERM")
                    continue
                self.assertEqual(p.returncode, -signal.SIGSYS, (p.stdout, p.stderr))
                self.assertNotIn(f"probe {action}", p.stdout)

    @unittest.skipUnless(LANDLOCK_ABI, "kernel without Landlock")
    def test_unprivileged_worker_is_confined_too(self):
        """Started by an ordinary user: no user switch, the same walls."""
        out = tempfile.mkdtemp(dir=self.tmp)
        os.chown(out, self.uid, self.gid)
        p, _ = self.worker(f"whoami,read={self.outside},write={self.tmp}/x,write=inside",
                           user_args=False, outdir=out,
                           prefix=as_user(self.uid, self.gid, []))
        got = self.lines(p)
        who = dict(kv.split("=", 1) for kv in got["probe whoami"].split())
        self.assertEqual(who["uid"], f"{self.uid},{self.uid},{self.uid}")
        self.assertEqual(who["capeff"], "0")
        self.assertEqual(who["seccomp"], "2")
        self.assertEqual(got[f"probe read {self.outside}"], "denied EACCES")
        self.assertEqual(got[f"probe write {self.tmp}/x"], "denied EACCES")
        self.assertEqual(got["probe write inside"], "allowed")
        p, _ = self.worker("socket", user_args=False, outdir=out,
                           prefix=as_user(self.uid, self.gid, []))
        self.assertEqual(p.returncode, -signal.SIGSYS)

    def test_parent_reports_the_kill(self):
        out = os.path.join(self.tmp, "conv-out")
        env = dict(os.environ, MESHFS_TEST_SANDBOX_PROBE="socket")
        p = subprocess.run([tool("meshfs-convert"), "--no-cache", "-o", out, "-f", "fmd",
                            os.path.join(self.src, "crate")], capture_output=True, text=True,
                           env=env, timeout=120)
        self.assertEqual(p.returncode, 1)
        self.assertIn("crate.obj: importer killed by the sandbox (SIGSYS): it attempted a "
                      "forbidden system call", p.stderr)
        leftovers = [n for n in os.listdir(out)] if os.path.isdir(out) else []
        self.assertEqual(leftovers, [])  # no .meshfs-* or w/ left behind


@unittest.skipUnless(IS_ROOT, "needs root")
class RootConversionTest(unittest.TestCase):
    """Root's conversions run as the model's owner (a root-owned model's
    as the worker user) and read what that user can, no more
    (docs/security.md, "Which user")."""

    def setUp(self):
        # 0700, root's: the folders above SRC are walked with the
        # daemon's rights, those inside it with the model owner's
        self._tmp = tempfile.TemporaryDirectory(prefix="meshfs-sec-")
        self.tmp = self._tmp.name
        self.src = os.path.join(self.tmp, "src")
        shutil.copytree(EXAMPLES, self.src)

    def private(self, owner):
        for d, dirs, files in os.walk(self.src):
            os.chown(d, owner[0], owner[1])
            os.chmod(d, 0o700)
            for f in files:
                os.chown(os.path.join(d, f), owner[0], owner[1])
                os.chmod(os.path.join(d, f), 0o600)

    def tearDown(self):
        self._tmp.cleanup()

    def test_private_models_convert_with_root_owned_outputs(self):
        """0600 files in 0700 folders of a user U: U's workers read them."""
        _, uid, gid = make_user("o")
        self.private((uid, gid))
        out = os.path.join(self.tmp, "out")
        p, rows = convert([self.src], out, "-f", "fmd,gmf,vrt")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(rows), 5)
        self.assertTrue(all(r["ok"] for r in rows), rows)
        names = []
        for d, dirs, files in os.walk(out):
            self.assertNotIn("w", dirs)
            for f in files:
                if f.startswith(".") or f.endswith(".lgepkg"):
                    continue
                st = os.lstat(os.path.join(d, f))
                # root's, with the model's group (meshfs-convert.1)
                self.assertEqual((st.st_uid, st.st_gid), (0, gid), f)
                self.assertEqual(st.st_nlink, 1)
                self.assertGreater(st.st_size, 0, f)
                names.append(f)
        self.assertEqual(len(names), 15)
        if HOOKS:
            # the sandbox changes who writes, never what
            base = os.path.join(self.tmp, "base")
            # directly spawned: a fork server confines itself whatever a
            # request's environment says
            env = dict(os.environ, MESHFS_TEST_NO_SANDBOX="1", MESHFS_FORK_SERVER="0")
            b = subprocess.run([tool("meshfs-convert"), "--no-cache", "-q", "-o", base, "-f", "fmd,gmf,vrt", self.src],
                               env=env, capture_output=True, text=True)
            self.assertEqual(b.returncode, 0, b.stderr)
            for d, _, files in os.walk(out):
                for f in files:
                    if f.startswith("."):
                        continue
                    a = os.path.join(d, f)
                    b = os.path.join(base, os.path.relpath(a, out))
                    with open(a, "rb") as fa, open(b, "rb") as fb:
                        self.assertEqual(fa.read(), fb.read(), a)

    def test_root_only_models_are_not_read(self):
        """A root-owned model converts as the worker user (nobody), which
        cannot read a 0600 file of root's: no capability reads it for it."""
        os.chmod(os.path.join(self.src, "crate", "crate.obj"), 0o600)
        out = os.path.join(self.tmp, "out")
        p, rows = convert([os.path.join(self.src, "crate")], out, "-f", "fmd")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual([r["ok"] for r in rows], [False])
        self.assertIn('crate.obj: import failed: Unable to open file "crate.obj".', p.stderr)

    def test_unknown_worker_user_is_refused(self):
        p = run([tool("meshfs-convert"), "--worker-user", "no-such-user-mfs", "-o",
                 os.path.join(self.tmp, "o"), self.src])
        self.assertEqual(p.returncode, 2)
        self.assertIn("worker user 'no-such-user-mfs': no such user", p.stderr)
        p = run([tool("meshfs-convert"), "--worker-user", "root", "-o",
                 os.path.join(self.tmp, "o"), self.src])
        self.assertEqual(p.returncode, 2)
        self.assertIn("worker user 'root': has uid 0; the worker must not run as root", p.stderr)

    def test_worker_runs_as_the_chosen_user(self):
        """-o worker_user / --worker-user: the live worker's uid, from /proc."""
        user, uid, gid = make_user("u")
        mnt = os.path.join(self.tmp, "mnt")
        env = dict(os.environ, MESHFS_TEST_WORKER_SLEEP="3")
        for how in ("mount", "convert"):
            with self.subTest(how=how):
                if how == "mount":
                    ctx = Mount(self.src, mnt, os.path.join(self.tmp, "cache"),
                                f"worker_user={user}", env=env)
                    m = ctx.__enter__()
                    reader = subprocess.Popen(["cat", os.path.join(mnt, "crate", "crate.fmd")],
                                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    parent = m.proc.pid
                else:
                    ctx = None
                    reader = subprocess.Popen([tool("meshfs-convert"), "--no-cache", "-q", "--worker-user", user,
                                               "-f", "fmd", "-o", os.path.join(self.tmp, "o"),
                                               os.path.join(self.src, "crate")], env=env,
                                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    parent = reader.pid
                try:
                    uids = self.worker_uids(parent)
                finally:
                    reader.wait(timeout=60)
                    if ctx:
                        ctx.__exit__(None, None, None)
                self.assertTrue(uids, "no worker seen")
                self.assertEqual(set(uids), {uid})
                self.assertEqual(reader.returncode, 0)

    @staticmethod
    def worker_uids(parent, wait=2.5):
        """The uids of parent's workers once they have settled: a worker
        starts as root and switches before it opens the model, so a sample
        taken at its very start may still say 0."""
        deadline = time.time() + wait
        found = []
        while time.time() < deadline:
            found = []
            procs = {}
            for pid in os.listdir("/proc"):
                if not pid.isdigit():
                    continue
                try:
                    with open(f"/proc/{pid}/status") as f:
                        st = dict(l.rstrip("\n").split(":\t", 1) for l in f if ":\t" in l)
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        server = b"\0--server\0" in f.read()
                except OSError:
                    continue
                # a server's spare waits for its job as root, holding only
                # CAP_SETUID/CAP_SETGID: its user comes with the job
                idle = server and int(st["PPid"]) != parent and int(st.get("CapEff", "0"), 16) != 0
                if st.get("Name") == "meshfs-worker" and not idle:
                    procs[int(pid)] = (int(st["PPid"]), server, int(st["Uid"].split()[1]))
            # the fork server (root, never opens a model) forks the workers;
            # they inherit its command line
            servers = {p for p, (pp, server, _) in procs.items() if pp == parent and server}
            for pp, server, uid in procs.values():
                if pp in servers or (pp == parent and not server):
                    found.append(uid)
            if found and 0 not in found:
                return found
            time.sleep(0.05)
        return found


# ---- issue 33: conversions as the model's owner; confined helpers ---------

_groups = []


def make_group(tag, *members):
    """A fresh group with members (user names); its gid."""
    import grp
    name = f"mfsg{tag}{os.getpid() % 100000}"
    subprocess.run(["groupadd", name], check=True, capture_output=True)
    _groups.append(name)
    for m in members:
        subprocess.run(["usermod", "-aG", name, m], check=True, capture_output=True)
    return grp.getgrnam(name).gr_gid


def status(pid):
    """/proc/PID/status as a dict, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return dict(l.rstrip("\n").split(":\t", 1) for l in f if ":\t" in l)
    except OSError:
        return None


def descendants(root):
    """{pid: status} of every live descendant of root (by the PPid chain)."""
    kids = {}
    for p in os.listdir("/proc"):
        st = status(p) if p.isdigit() else None
        if st and not st.get("State", "").startswith("Z"):
            kids.setdefault(int(st["PPid"]), []).append((int(p), st))
    out, todo = {}, [root]
    while todo:
        for pid, st in kids.get(todo.pop(), []):
            out[pid] = st
            todo.append(pid)
    return out


def switched_workers(root, wait=8.0):
    """The statuses of root's descendants that are meshfs-workers running a
    job (switched user: no capability left), once there is one."""
    deadline = time.time() + wait
    while time.time() < deadline:
        ws = [st for st in descendants(root).values()
              if st["Name"] == "meshfs-worker" and int(st["CapEff"], 16) == 0
              and st["Uid"].split()[0] != "0"]
        if ws:
            return ws
        time.sleep(0.05)
    return []


TRIANGLE = "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"


def gltf_triangle(uri):
    """A glTF whose positions come from an external buffer at uri."""
    import json
    return json.dumps({
        "asset": {"version": "2.0"}, "scene": 0, "scenes": [{"nodes": [0]}], "nodes": [{"mesh": 0}],
        "meshes": [{"primitives": [{"attributes": {"POSITION": 0}}]}],
        "buffers": [{"uri": uri, "byteLength": 36}],
        "bufferViews": [{"buffer": 0, "byteOffset": 0, "byteLength": 36}],
        "accessors": [{"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3",
                       "min": [0, 0, 0], "max": [5, 7, 0]}]})


def put(path, data, mode, owner):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
    os.chmod(path, mode)
    os.chown(path, owner[1], owner[2])


def folder(path, mode, owner):
    os.makedirs(path, exist_ok=True)
    os.chown(path, owner[1], owner[2])
    os.chmod(path, mode)


@unittest.skipUnless(IS_ROOT, "needs root: test users, allow_other, chown")
class ModelOwnerTest(unittest.TestCase):
    """A conversion reads only what the model's owner can (issue 33, items
    1 and 3): user B's model in a shared 1777 folder that names A's files."""

    FORMATS = ("fmd", "gmf", "vrt", "dem", "tex")

    def setUp(self):
        self._tmp = open_tmp()
        self.tmp = self._tmp.name
        self.src = os.path.join(self.tmp, "src")
        os.makedirs(self.src)
        os.chmod(self.src, 0o755)
        self.mnt = os.path.join(self.tmp, "mnt")
        self.cache = os.path.join(self.tmp, "cache")
        if not hasattr(ModelOwnerTest, "A"):
            ModelOwnerTest.A = make_user("ma")
            ModelOwnerTest.B = make_user("mb")

    def tearDown(self):
        self._tmp.cleanup()

    def s(self, *p):
        return os.path.join(self.src, *p)

    def view(self, rel):
        """(st_mode, error text with its folder's name taken out, bytes or
        errno) of a view, as root reads it."""
        path = os.path.join(self.mnt, rel)
        mode = os.stat(path).st_mode
        try:
            err = os.getxattr(path, "user.meshfs.error").decode()
        except OSError:
            err = None
        try:
            with open(path, "rb") as f:
                got = f.read()
        except OSError as e:
            got = e.errno
        top = rel.split("/")[0]
        return mode, err and err.replace(top + "/", "TOP/"), got

    def test_an_unreadable_reference_fails_as_a_missing_one(self):
        A, B = self.A, self.B
        root = ("root", 0, 0)
        # x1: A's files exist, in A's 0700 folder and as A's 0600 file in
        # the shared folder; x2: the same names, absent
        for top, present in (("x1", True), ("x2", False)):
            folder(self.s(top), 0o755, root)
            folder(self.s(top, "a"), 0o700, A)
            folder(self.s(top, "drop"), 0o1777, root)
            if present:
                put(self.s(top, "a", "m.mtl"), "newmtl red\nKd 0.25 0.5 0.75\n", 0o644, A)
                put(self.s(top, "a", "data.bin"), struct.pack("<9f", 0, 0, 0, 5, 0, 0, 0, 7, 0),
                    0o644, A)
                put(self.s(top, "drop", "priv.bin"), struct.pack("<9f", 0, 0, 0, 5, 0, 0, 0, 7, 0),
                    0o600, A)
                shutil.copy(os.path.join(EXAMPLES, "crate", "textures", "crate.png"),
                            self.s(top, "a", "t.png"))
                os.chown(self.s(top, "a", "t.png"), A[1], A[2])
            put(self.s(top, "drop", "m.obj"), "mtllib ../a/m.mtl\nusemtl red\n" + TRIANGLE, 0o644, B)
            put(self.s(top, "drop", "g.gltf"), gltf_triangle("../a/data.bin"), 0o644, B)
            put(self.s(top, "drop", "p.gltf"), gltf_triangle("priv.bin"), 0o644, B)
            # the probe of issue 33, item 3: a texture in A's folder
            put(self.s(top, "drop", "t.mtl"), "newmtl skin\nmap_Kd ../a/t.png\n", 0o644, B)
            put(self.s(top, "drop", "t.obj"), "mtllib t.mtl\nusemtl skin\n" + TRIANGLE, 0o644, B)
        with Mount(self.src, self.mnt, self.cache, "allow_other"):
            for model in ("m", "g", "p", "t"):
                for f in self.FORMATS:
                    with self.subTest(model=model, format=f):
                        there = self.view(f"x1/drop/{model}.{f}")
                        absent = self.view(f"x2/drop/{model}.{f}")
                        self.assertEqual(there, absent)
            # the control: B's model converts, and its owner is B
            st = os.stat(os.path.join(self.mnt, "x1", "drop", "m.gmf"))
            self.assertEqual((st.st_uid, st.st_mode & 0o777), (B[1], 0o444))

    def test_the_worker_is_the_owner_with_the_owners_groups(self):
        A, B = self.A, self.B
        g = make_group("r", B[0])
        # A's folder and .mtl, readable by group g, of which B is a member
        folder(self.s("g"), 0o750, (A[0], A[1], g))
        put(self.s("g", "m.mtl"), "newmtl red\nKd 0.25 0.5 0.75\n", 0o640, (A[0], A[1], g))
        folder(self.s("y"), 0o1777, ("root", 0, 0))
        put(self.s("y", "b.obj"), "mtllib ../g/m.mtl\nusemtl red\n" + TRIANGLE, 0o644, B)
        put(self.s("y", "n.obj"), "mtllib ../g/none.mtl\nusemtl red\n" + TRIANGLE, 0o644, B)
        env = dict(os.environ, MESHFS_TEST_WORKER_SLEEP="2")
        with Mount(self.src, self.mnt, self.cache, "allow_other", env=env) as m:
            reader = subprocess.Popen(["cat", os.path.join(self.mnt, "y", "b.fmd")],
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            try:
                ws = switched_workers(m.proc.pid)
            finally:
                got = reader.communicate(timeout=60)[0]
            self.assertTrue(ws, "no worker seen")
            for st in ws:
                self.assertEqual(st["Uid"].split(), [str(B[1])] * 4)
                self.assertEqual(st["Gid"].split(), [str(B[2])] * 4)
                self.assertEqual(set(st["Groups"].split()), {str(B[2]), str(g)})
            # the group-readable .mtl was read: its colour is in the view,
            # which a model naming a missing one does not have
            with open(os.path.join(self.mnt, "y", "n.fmd"), "rb") as f:
                self.assertNotEqual(got, f.read())
            self.assertTrue(got)


@unittest.skipUnless(IS_ROOT, "needs root: the helpers drop root's capabilities")
class CensusTest(unittest.TestCase):
    """During a conversion, every process under the daemon and under
    meshfs-convert has no_new_privs, a seccomp filter, and no capability
    beyond its role's (docs/security.md, "Confined helpers")."""

    SETUID, SETGID, KILL, SYS_ADMIN = 1 << 7, 1 << 6, 1 << 5, 1 << 21
    # role: (largest permitted/effective set, largest bounding set)
    ROLES = {
        "fork server": (SETUID | SETGID | KILL, SETUID | SETGID),
        "worker": (SETUID | SETGID, SETUID | SETGID),  # a spare until its job comes
        "unmount helper": (SYS_ADMIN, SYS_ADMIN),
        "direct worker": (0, 0),
    }

    def setUp(self):
        self._tmp = open_tmp()
        self.tmp = self._tmp.name
        self.src = os.path.join(self.tmp, "src")
        shutil.copytree(EXAMPLES, self.src)

    def tearDown(self):
        self._tmp.cleanup()

    def census(self, root):
        """Each descendant's role, after checking it; waits for a worker
        that runs a job."""
        self.assertTrue(switched_workers(root), "no worker running a job")
        roles = []
        for pid, st in descendants(root).items():
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                server = b"\0--server\0" in f.read()
            if st["Name"] == "meshfs-umount":
                role = "unmount helper"
            elif st["Name"] == "meshfs-worker" and server:
                role = "fork server" if int(st["PPid"]) == root else "worker"
            elif st["Name"] == "meshfs-worker":
                role = "direct worker"
            else:
                self.fail(f"unexpected process {pid} {st['Name']} under {root}")
            caps, bnd = self.ROLES[role]
            with self.subTest(pid=pid, role=role):
                self.assertEqual(st["NoNewPrivs"], "1")
                self.assertEqual(st["Seccomp"], "2")
                for k in ("CapEff", "CapPrm"):
                    self.assertEqual(int(st[k], 16) & ~caps, 0, f"{k} {st[k]}")
                self.assertEqual(int(st["CapBnd"], 16) & ~bnd, 0, f"CapBnd {st['CapBnd']}")
                self.assertEqual(int(st["CapInh"], 16), 0)
                self.assertEqual(int(st["CapAmb"], 16), 0)
            roles.append(role)
        return roles

    def test_under_the_mount(self):
        mnt = os.path.join(self.tmp, "mnt")
        env = dict(os.environ, MESHFS_TEST_WORKER_SLEEP="3")
        with Mount(self.src, mnt, os.path.join(self.tmp, "cache"), "allow_other", env=env) as m:
            reader = subprocess.Popen(["cat", os.path.join(mnt, "crate", "crate.fmd")],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                roles = self.census(m.proc.pid)
            finally:
                reader.wait(timeout=60)
        for role in ("fork server", "worker", "unmount helper"):
            self.assertIn(role, roles)

    def test_under_meshfs_convert(self):
        for fork_server in ("1", "0"):
            with self.subTest(fork_server=fork_server):
                env = dict(os.environ, MESHFS_TEST_WORKER_SLEEP="3", MESHFS_FORK_SERVER=fork_server)
                p = subprocess.Popen([tool("meshfs-convert"), "--no-cache", "-q", "-f", "fmd", "-o",
                                      os.path.join(self.tmp, "o" + fork_server),
                                      os.path.join(self.src, "crate")], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                try:
                    roles = self.census(p.pid)
                finally:
                    p.wait(timeout=60)
                self.assertEqual(p.returncode, 0)
                self.assertIn("direct worker" if fork_server == "0" else "fork server", roles)


# ---- S5: nosuid, nodev ------------------------------------------------------

@unittest.skipUnless(IS_ROOT, "needs root (allow_other, setuid files, test users)")
class MountFlagsTest(unittest.TestCase):
    def setUp(self):
        self._tmp = open_tmp()
        self.tmp = self._tmp.name
        self.src = os.path.join(self.tmp, "src")
        os.makedirs(self.src)
        os.chmod(self.src, 0o755)
        self.mnt = os.path.join(self.tmp, "mnt")
        self.cache = os.path.join(self.tmp, "cache")

    def tearDown(self):
        self._tmp.cleanup()

    def test_setuid_and_devices_are_not_honoured(self):
        user, uid, gid = make_user("s")
        idbin = os.path.join(self.src, "id")
        shutil.copy2(shutil.which("id"), idbin)
        os.chown(idbin, 0, 0)
        os.chmod(idbin, 0o4755)
        os.mknod(os.path.join(self.src, "null"), 0o666 | 0o020000, os.makedev(1, 3))
        # the control: outside the mount the setuid bit works (this /tmp
        # honours it), so the test can fail
        direct = subprocess.run(as_user(uid, gid, [idbin, "-u"]), capture_output=True, text=True)
        src_nosuid = "nosuid" in subprocess.run(["findmnt", "-no", "OPTIONS", "-T", self.src],
                                                capture_output=True, text=True).stdout
        if not src_nosuid:
            self.assertEqual(direct.stdout.strip(), "0")
        # libfuse mounts nosuid,nodev by default, but "suid,dev" (an fstab
        # line can say so) used to turn that off: meshfs must win
        with Mount(self.src, self.mnt, self.cache, "allow_other", "suid", "dev"):
            opts = None
            with open("/proc/mounts") as f:
                for line in f:
                    fields = line.split()
                    if fields[1] == self.mnt:
                        opts = fields[3].split(",")
            self.assertIsNotNone(opts)
            self.assertIn("nosuid", opts)
            self.assertIn("nodev", opts)
            self.assertIn("ro", opts)
            st = os.stat(os.path.join(self.mnt, "id"))
            self.assertTrue(st.st_mode & 0o4000)  # shown as it is...
            via = subprocess.run(as_user(uid, gid, [os.path.join(self.mnt, "id"), "-u"]),
                                 capture_output=True, text=True)
            self.assertEqual(via.returncode, 0, via.stderr)
            self.assertEqual(via.stdout.strip(), str(uid))  # ...but gives nothing
            with self.assertRaises(PermissionError):
                open(os.path.join(self.mnt, "null"), "rb")


# ---- S6: descriptors ----------------------------------------------------------

HOLDER = r"""
import os, resource, sys
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
root, view, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
fds = [os.open(view, os.O_RDONLY) for _ in range(10)]
for name in sorted(os.listdir(root)):
    if len(fds) >= n:
        break
    if name.startswith("f"):
        fds.append(os.open(os.path.join(root, name), os.O_RDONLY))
print(len(fds), flush=True)
sys.stdin.read()
"""


@unittest.skipUnless(IS_ROOT, "needs root (allow_other, test users)")
class DescriptorTest(unittest.TestCase):
    def setUp(self):
        self._tmp = open_tmp()
        self.tmp = self._tmp.name
        self.src = os.path.join(self.tmp, "src")
        shutil.copytree(EXAMPLES, self.src)
        self.files = os.path.join(self.src, "many")
        os.makedirs(self.files)
        for i in range(2000):
            with open(os.path.join(self.files, f"f{i:05d}.txt"), "w") as f:
                f.write(f"{i}\n")
        for d, dirs, files in os.walk(self.src):
            os.chmod(d, 0o755)
            for f in files:
                os.chmod(os.path.join(d, f), 0o644)
        self.mnt = os.path.join(self.tmp, "mnt")
        self.cache = os.path.join(self.tmp, "cache")
        self.limits = resource.getrlimit(resource.RLIMIT_NOFILE)

    def tearDown(self):
        resource.setrlimit(resource.RLIMIT_NOFILE, self.limits)
        self._tmp.cleanup()

    def test_one_users_open_files_do_not_starve_another(self):
        soft, hard = self.limits
        if hard < 4096:
            self.skipTest(f"hard RLIMIT_NOFILE {hard} leaves no room to test")
        a, auid, agid = make_user("a")
        b, buid, bgid = make_user("b")
        expected = os.path.join(self.tmp, "expected")
        p, _ = convert([os.path.join(self.src, "props")], expected, "-f", "fmd")
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(expected, "cone.fmd"), "rb") as f:
            cone = f.read()
        # systemd's default soft limit; the daemon must lift it itself
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))
        with Mount(self.src, self.mnt, self.cache, "allow_other") as m:
            resource.setrlimit(resource.RLIMIT_NOFILE, self.limits)
            with open(f"/proc/{m.proc.pid}/limits") as f:
                line = next(l for l in f if l.startswith("Max open files"))
            self.assertEqual(line.split()[3:5], [str(hard), str(hard)])
            holder = subprocess.Popen(
                as_user(auid, agid, [sys.executable, "-c", HOLDER, os.path.join(self.mnt, "many"),
                                     os.path.join(self.mnt, "crate", "crate.fmd"), "2000"]),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                held = holder.stdout.readline().strip()
                self.assertEqual(held, "2000", holder.stderr.read() if not held else "")
                # user B, meanwhile: a cold view (a conversion) and a passthrough file
                got = subprocess.run(as_user(buid, bgid, ["cat", os.path.join(self.mnt, "props", "cone.fmd")]),
                                     capture_output=True, timeout=120)
                self.assertEqual(got.returncode, 0, got.stderr)
                self.assertEqual(got.stdout, cone)
                got = subprocess.run(as_user(buid, bgid, ["cat", os.path.join(self.mnt, "many", "f01999.txt")]),
                                     capture_output=True, timeout=60)
                self.assertEqual(got.stdout, b"1999\n")
            finally:
                holder.stdin.close()
                holder.wait(timeout=60)
                holder.stdout.close()
                holder.stderr.close()
            self.assertTrue(m.alive())


# ---- S1/S2: a model's name is a path, not a way elsewhere (issue 33) -------

# A's private triangle is 5 x 7; B's own is 1 x 1.  A's secret text, read
# as three float32 vertices, is small numbers (every fourth byte '?'), and
# its marks are whole (x, y) pairs, which survive any change of frame.
TRI_A = "v 0 0 0\nv 5 0 0\nv 0 7 0\nf 1 2 3\n"
TRI_B = "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"
SECRET_TEXT = b"ta1?tb2?tc3?td4?te5?tf6?tg7?th8?ti9?A's private text\n"
SECRET_MARKS = [SECRET_TEXT[i:i + 8] for i in (0, 12, 24)] + [b"private text"]
PKG = "game_resources.lgepkg"

READER = r"""
import json, os, sys
out = {}
for d in sys.argv[1:]:
    for name in sorted(os.listdir(d)):
        p = os.path.join(d, name)
        if os.path.isdir(p):
            continue
        row = {}
        try:
            with open(p, "rb") as f:
                row["data"] = f.read().hex()
        except OSError as e:
            row["errno"] = e.errno
        try:
            row["error"] = os.getxattr(p, "user.meshfs.error").hex()
        except OSError:
            pass
        out[p] = row
json.dump(out, sys.stdout)
"""


def gltf_json(uri, n=36):
    """A glTF whose three positions are the buffer at uri."""
    import json
    return json.dumps({
        "asset": {"version": "2.0"}, "scene": 0, "scenes": [{"nodes": [0]}], "nodes": [{"mesh": 0}],
        "meshes": [{"primitives": [{"attributes": {"POSITION": 0}}]}],
        "buffers": [{"uri": uri, "byteLength": n}],
        "bufferViews": [{"buffer": 0, "byteOffset": 0, "byteLength": 36}],
        "accessors": [{"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3",
                       "min": [0, 0, 0], "max": [1, 1, 1]}]})


def gltf_own_triangle():
    """B's harmless glTF: a 1 x 1 triangle in a data: URI."""
    import base64
    import struct
    raw = struct.pack("<9f", 0, 0, 0, 1, 0, 0, 0, 1, 0)
    return gltf_json("data:application/octet-stream;base64," + base64.b64encode(raw).decode())


def has_secret(data):
    return any(m in data for m in SECRET_MARKS)


def bounds(data, suffix):
    """(min, max) of a view's or package's geometry, read by meshfs-inspect
    (docs/formats, docs/inspect.md)."""
    import json
    with tempfile.TemporaryDirectory() as t:
        p = os.path.join(t, "x" + suffix)
        with open(p, "wb") as f:
            f.write(data)
        r = run([tool("meshfs-inspect"), "--json", p])
        row = json.loads(r.stdout.splitlines()[0])
        assert row["ok"], row
        return row["min"], row["max"]


@unittest.skipUnless(IS_ROOT, "needs root (allow_other, test users, chown)")
class BackslashNameTest(unittest.TestCase):
    """User B, who may write in a shared 1777 folder, names a model
    drop/..\a\private.obj: its views are B's file's, never A's 0600
    a/private.obj, and no view or package B can read holds any byte of A's
    secret text, through the mount or meshfs-convert (issue 33, item 1)."""

    @classmethod
    def setUpClass(cls):
        cls.A = make_user("pa")
        cls.B = make_user("pb")

    def build(self, a_mode):
        self._tmp = open_tmp()
        self.addCleanup(self._tmp.cleanup)
        self.tmp = self._tmp.name
        src = self.src = os.path.join(self.tmp, "src")
        _, auid, agid = self.A
        _, buid, bgid = self.B

        def put(rel, data, mode, uid, gid):
            p = os.path.join(src, rel)
            with open(p, "wb") as f:
                f.write(data if isinstance(data, bytes) else data.encode())
            os.chown(p, uid, gid)
            os.chmod(p, mode)

        def folder(rel, mode, uid, gid):
            p = os.path.join(src, rel)
            os.makedirs(p)
            os.chown(p, uid, gid)
            os.chmod(p, mode)

        os.makedirs(src)
        os.chmod(src, 0o755)
        folder("a", a_mode, auid, agid)
        put("a/private.obj", TRI_A, 0o600, auid, agid)
        put("a/secret.txt", SECRET_TEXT, 0o600, auid, agid)
        folder("drop", 0o1777, 0, 0)
        put("drop/..\\a\\private.obj", TRI_B, 0o644, buid, bgid)
        # the decoy: a harmless glTF of B's whose name leads to B's other
        # glTF, whose buffer is A's secret
        put("drop/..\\b\\m.gltf", gltf_own_triangle(), 0o644, buid, bgid)
        # the same, not hidden from meshfs-convert by a leading dot
        put("drop/x\\..\\..\\a\\private.obj", TRI_B, 0o644, buid, bgid)
        put("drop/x\\..\\..\\b\\m.gltf", gltf_own_triangle(), 0o644, buid, bgid)
        folder("b", 0o755, buid, bgid)
        put("b/m.gltf", gltf_json("../a/secret.txt", len(SECRET_TEXT)), 0o644, buid, bgid)
        put("b/w.gltf", gltf_json("..\\a\\secret.txt", len(SECRET_TEXT)), 0o644, buid, bgid)
        put("b/v.gltf", gltf_json("..\\..\\src\\a\\secret.txt", len(SECRET_TEXT)), 0o644, buid, bgid)

    def read_as_b(self, *folders):
        _, buid, bgid = self.B
        p = subprocess.run(as_user(buid, bgid, [sys.executable, "-c", READER] + list(folders)),
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        import json
        rows = json.loads(p.stdout)
        return {k: {"data": bytes.fromhex(v["data"]) if "data" in v else None,
                    "errno": v.get("errno"),
                    "error": bytes.fromhex(v.get("error", ""))} for k, v in rows.items()}

    def check_mount(self, a_mode):
        self.build(a_mode)
        mnt = os.path.join(self.tmp, "mnt")
        with Mount(self.src, mnt, os.path.join(self.tmp, "cache"), "allow_other") as m:
            rows = self.read_as_b(os.path.join(mnt, "drop"), os.path.join(mnt, "b"))
            self.assertTrue(m.alive())
            log = m.output()
        self.check_rows(rows, mnt)
        self.assertFalse(has_secret(log.encode()), log)

    def check_rows(self, rows, top, mount=True):
        """Every file B could read: no secret; the backslash model's views
        and drop's package hold B's 1 x 1 triangle, never A's 5 x 7."""
        drop = os.path.join(top, "drop")
        seen = set()
        for path, row in rows.items():
            data = row["data"]
            self.assertFalse(has_secret(row["error"]), (path, row["error"]))
            if data is None:
                # a package listed before its folder's failures were known
                # is gone once none of its models converted (ENOENT)
                allowed = (errno.EACCES, errno.EIO, errno.EPERM) + \
                    ((errno.ENOENT,) if path.endswith(PKG) else ())
                self.assertIn(row["errno"], allowed, path)
                continue
            self.assertFalse(has_secret(data), path)
            name = os.path.basename(path)
            if os.path.dirname(path) == drop and name.endswith(("\\.vrt", ".gmf", ".vrt", PKG)):
                if data:
                    lo, hi = bounds(data, os.path.splitext(name)[1])
                    self.assertEqual(hi[:2], [1, 1], (path, lo, hi))
                    seen.add(name)
        # the backslash models convert, as B's own files
        for name in ("x\\..\\..\\a\\private.vrt", "x\\..\\..\\a\\private.gmf",
                     "x\\..\\..\\b\\m.gmf", PKG):
            self.assertIn(name, seen)
        if mount:
            self.assertIn("..\\a\\private.vrt", seen)
            self.assertIn("..\\a\\private.gmf", seen)

    def test_backslash_name_through_the_mount(self):
        self.check_mount(0o755)

    def test_backslash_name_through_the_mount_private_folder(self):
        self.check_mount(0o700)

    @unittest.skipUnless(HOOKS, "needs a test build (MESHFS_TEST_MISREAD_MODEL)")
    def test_a_misread_model_fails_and_is_remembered(self):
        """The host's own check, on its own: an importer made to take the
        name apart again reads A's file; the daemon sees the model is not
        what was read and fails every view, for good."""
        self.build(0o755)
        # readable by B: B's worker may open it, so only the host's check
        # stands between A's bytes and B's views (as B, a 0600 file of A's
        # fails to open, which the tests above cover)
        os.chmod(os.path.join(self.src, "a", "private.obj"), 0o644)
        mnt = os.path.join(self.tmp, "mnt")
        env = dict(os.environ, MESHFS_TEST_MISREAD_MODEL="1")
        with Mount(self.src, mnt, os.path.join(self.tmp, "cache"), "allow_other", env=env) as m:
            drop = os.path.join(mnt, "drop")
            rows = self.read_as_b(drop)
            done = m.stats()["conversions"]
            again = self.read_as_b(drop)
            self.assertEqual(m.stats()["conversions"], done)  # remembered, not run again
            log = m.output()
        self.assertFalse(has_secret(log.encode()), log)
        for got in (rows, again):
            for path, row in got.items():
                self.assertFalse(has_secret(row["error"]), path)
                if row["data"]:
                    self.assertFalse(has_secret(row["data"]), path)
                    if path.endswith((".vrt", ".gmf", PKG)):
                        lo, hi = bounds(row["data"], os.path.splitext(path)[1])
                        self.assertNotEqual((hi or [0, 0])[:2], [5, 7], path)
            for model in ("..\\a\\private", "x\\..\\..\\a\\private", "..\\b\\m"):
                for ext in (".vrt", ".gmf"):
                    row = got[os.path.join(drop, model + ext)]
                    self.assertEqual(row["errno"], errno.EIO, model + ext)
                    name = model + (".obj" if "private" in model else ".gltf")
                    self.assertEqual(row["error"].decode(), "the worker read another file than the "
                                     f"model 'drop/{name}': refused, nothing of it is used")

    def test_references_of_a_backslash_name_are_beside_it(self):
        """A reference of drop/x\\..\\..\\a\\m.obj is read in drop/, as the
        model is, whichever importer composes its path (assimp, fast_obj,
        which turns the joined path's '\\' into '/', cgltf)."""
        import json
        import struct
        self.build(0o755)
        drop = os.path.join(self.src, "drop")
        for d in (drop, os.path.join(self.src, "a")):
            with open(os.path.join(d, "m.mtl"), "w") as f:
                f.write("newmtl red\nKd 1 0 0\n")
            with open(os.path.join(d, "m.bin"), "wb") as f:
                f.write(struct.pack("<9f", 0, 0, 0, 1, 0, 0, 0, 1, 0))
        with open(os.path.join(drop, "x\\..\\..\\a\\m.obj"), "w") as f:
            f.write("mtllib m.mtl\nusemtl red\n" + TRI_B)
        with open(os.path.join(drop, "x\\..\\..\\a\\g.gltf"), "w") as f:
            f.write(gltf_json("m.bin"))
        for importer in ("auto", "assimp"):
            out = os.path.join(self.tmp, "out-" + importer)
            p, rows = convert([self.src], out, "-f", "vrt", "--importer=" + importer)
            deps = {r["model"]: r["deps"] for r in rows}
            for model, ref in (("drop/x\\..\\..\\a\\m.obj", "drop/m.mtl"),
                               ("drop/x\\..\\..\\a\\g.gltf", "drop/m.bin")):
                self.assertEqual(deps[model], [model, ref], (importer, p.stderr))

    def test_backslash_name_through_meshfs_convert(self):
        self.build(0o755)
        out = os.path.join(self.tmp, "out")
        p, rows = convert([self.src], out, "-f", "vrt,gmf,lgepkg")
        self.assertFalse(has_secret(p.stdout.encode() + p.stderr.encode()), p.stderr)
        for r in rows:
            self.assertFalse(has_secret(repr(r).encode()), r)
        os.chmod(out, 0o755)
        for d, _, files in os.walk(out):
            os.chmod(d, 0o755)
        got = self.read_as_b(os.path.join(out, "drop"), os.path.join(out, "b"))
        self.check_rows(got, out, mount=False)
        # and the files themselves, whoever may read them
        for d, _, files in os.walk(out):
            for f in files:
                with open(os.path.join(d, f), "rb") as fh:
                    data = fh.read()
                if f.startswith("..\\b\\") or d.endswith("drop"):
                    self.assertFalse(has_secret(data), os.path.join(d, f))


@unittest.skipUnless(IS_ROOT, "needs root (test users, chown)")
class OutputModesTest(unittest.TestCase):
    """A 0600 model's views are no more readable than the model, as files
    meshfs-convert writes as root and as the package of its folder, in the
    mount and in the output tree (issue 33, items 1 and 6)."""

    @classmethod
    def setUpClass(cls):
        cls.A = make_user("oa")  # not ModelOwnerTest's names
        cls.B = make_user("ob")

    def setUp(self):
        self.addCleanup(os.umask, os.umask(0o022))  # the modes below are this umask's
        self._tmp = open_tmp()
        self.addCleanup(self._tmp.cleanup)
        self.tmp = self._tmp.name
        self.src = os.path.join(self.tmp, "src")
        _, auid, agid = self.A
        _, buid, bgid = self.B
        shared = os.path.join(self.src, "shared")
        os.makedirs(shared)
        os.chmod(self.src, 0o755)
        os.chmod(shared, 0o1777)
        for name, text, mode, uid, gid in (("open.obj", TRI_B, 0o644, buid, bgid),
                                           ("private.obj", TRI_A, 0o600, auid, agid)):
            p = os.path.join(shared, name)
            with open(p, "w") as f:
                f.write(text)
            os.chown(p, uid, gid)
            os.chmod(p, mode)

    def test_meshfs_convert_as_root_narrows_what_it_writes(self):
        out = os.path.join(self.tmp, "out")
        p, rows = convert([self.src], out, "-f", "vrt,gmf,fmd,lgepkg")
        self.assertEqual(p.returncode, 0, p.stderr)
        d = os.path.join(out, "shared")
        modes = {f: os.stat(os.path.join(d, f)).st_mode & 0o7777 for f in os.listdir(d)
                 if not f.startswith(".")}
        for ext in ("vrt", "gmf", "fmd"):
            self.assertEqual(modes["private." + ext], 0o600, modes)  # root's alone
            self.assertEqual(modes["open." + ext], 0o644, modes)     # as before
        self.assertEqual(modes[PKG], 0o600, modes)                   # packs private's
        # a second run (nothing to write) narrows files an older run left open
        for f in modes:
            os.chmod(os.path.join(d, f), 0o644)
        p, _ = convert([self.src], out, "-f", "vrt,gmf,fmd,lgepkg")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(os.stat(os.path.join(d, "private.vrt")).st_mode & 0o7777, 0o600)
        self.assertEqual(os.stat(os.path.join(d, PKG)).st_mode & 0o7777, 0o600)
        # B reads nothing of A's model
        _, buid, bgid = self.B
        got = subprocess.run(as_user(buid, bgid, ["cat", os.path.join(d, "private.vrt")]),
                             capture_output=True)
        self.assertNotEqual(got.returncode, 0)
        self.assertEqual(got.stdout, b"")

    def test_meshfs_convert_as_root_gives_a_group_the_mount_would(self):
        """A 0640 model of A's group: root's outputs are that group's to
        read, and no one else's."""
        _, auid, agid = self.A
        p = os.path.join(self.src, "shared", "private.obj")
        os.chmod(p, 0o640)
        out = os.path.join(self.tmp, "out")
        pr, _ = convert([self.src], out, "-f", "vrt")
        self.assertEqual(pr.returncode, 0, pr.stderr)
        st = os.stat(os.path.join(out, "shared", "private.vrt"))
        self.assertEqual((st.st_uid, st.st_gid, st.st_mode & 0o7777), (0, agid, 0o640))

    def test_the_mounts_package_is_narrowed_by_a_private_model(self):
        mnt = os.path.join(self.tmp, "mnt")
        _, buid, bgid = self.B
        with Mount(self.src, mnt, os.path.join(self.tmp, "cache"), "allow_other") as m:
            pkg = os.path.join(mnt, "shared", PKG)
            st = os.stat(pkg)
            got = subprocess.run(as_user(buid, bgid, ["cat", pkg]), capture_output=True)
            self.assertTrue(m.alive())
        self.assertEqual(st.st_mode & 0o444, 0, oct(st.st_mode))
        self.assertNotEqual(got.returncode, 0)
        self.assertEqual(got.stdout, b"")


# ---- S3: the cache directory, end to end --------------------------------------

class CacheTrustTest(unittest.TestCase):
    def test_symlinked_cache_dir_refused_at_mount(self):
        with tempfile.TemporaryDirectory(prefix="meshfs-sec-") as tmp:
            real = os.path.join(tmp, "real")
            os.makedirs(real)
            link = os.path.join(tmp, "cache")
            os.symlink(real, link)
            mnt = os.path.join(tmp, "mnt")
            os.makedirs(mnt)
            p = run([tool("meshfs"), "-f", "-o", f"cache_dir={link}", EXAMPLES, mnt], timeout=60)
            self.assertEqual(p.returncode, 1)
            # the line as security.md quotes it: level, layer, reason, once each
            self.assertIn(f"meshfs: error: cache: {link} is a symbolic link; refusing to use it",
                          p.stderr)
            self.assertFalse(os.path.ismount(mnt))
            self.assertEqual(os.listdir(real), [])

    def _tree(self, root):
        """Every path under root with its bytes (None for a folder)."""
        out = {}
        for d, dirs, files in os.walk(root):
            for n in dirs:
                out[os.path.relpath(os.path.join(d, n), root)] = None
            for n in files:
                with open(os.path.join(d, n), "rb") as f:
                    out[os.path.relpath(os.path.join(d, n), root)] = f.read()
        return out

    def test_a_folder_of_the_users_is_never_made_a_cache(self):
        """A mistyped cache_dir= or --cache-dir naming a folder with files of
        its own: opening a cache would have removed its v1/ (the version 1
        entry folder) and tagged it CACHEDIR.TAG, which backup tools skip.
        Refused before anything is made or removed, by the mount and by
        meshfs-convert alike (docs/cache.md, "Where")."""
        with tempfile.TemporaryDirectory(prefix="meshfs-sec-") as tmp:
            mine = os.path.join(tmp, "assets")
            os.makedirs(os.path.join(mine, "v1"))
            with open(os.path.join(mine, "v1", "crate.obj"), "w") as f:
                f.write("v 0 0 0\n")
            with open(os.path.join(mine, "notes.txt"), "w") as f:
                f.write("mine\n")
            before = self._tree(mine)
            mnt = os.path.join(tmp, "mnt")
            os.makedirs(mnt)
            p = run([tool("meshfs"), "-f", "-o", f"cache_dir={mine}", EXAMPLES, mnt], timeout=60)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertFalse(os.path.ismount(mnt))
            want = (f"cache: {mine} holds files meshfs did not make ('notes.txt') and no "
                    "CACHEDIR.TAG of meshfs; refusing to make it a cache (give a new or empty "
                    "folder)")
            self.assertIn(f"meshfs: error: {want}", p.stderr)
            out = os.path.join(tmp, "out")
            report = os.path.join(tmp, "last-run.json")
            with open(report, "w") as f:
                f.write("{}\n")
            p = run([tool("meshfs-convert"), "-q", "--cache-dir", mine, "-o", out,
                     "--report", report, EXAMPLES], timeout=300)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn(f"meshfs-convert: {want}\n", p.stderr)
            self.assertEqual(self._tree(mine), before)
            with open(report) as f:  # a run that could not start keeps the last report
                self.assertEqual(f.read(), "{}\n")

    def test_another_programs_cache_is_never_used(self):
        """A folder tagged by another tool (ccache, a browser) is that tool's."""
        with tempfile.TemporaryDirectory(prefix="meshfs-sec-") as tmp:
            other = os.path.join(tmp, "ccache")
            os.makedirs(other)
            with open(os.path.join(other, "CACHEDIR.TAG"), "w") as f:
                f.write("Signature: 8a477f597d28d172789f06886806bc55\n"
                        "# This file is a cache directory tag created by ccache.\n")
            before = self._tree(other)
            p = run([tool("meshfs-convert"), "-q", "--cache-dir", other, "-o",
                     os.path.join(tmp, "out"), EXAMPLES], timeout=300)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn(f"meshfs-convert: cache: {other} holds another program's CACHEDIR.TAG; "
                          "refusing to use it (give a folder of meshfs's own)\n", p.stderr)
            self.assertEqual(self._tree(other), before)

    def test_a_folder_with_some_cache_names_is_not_a_cache(self):
        """A tmp/ or a v1/ alone is a user's folder: opening a cache would
        have removed the old files under tmp/ and everything under v1/."""
        with tempfile.TemporaryDirectory(prefix="meshfs-sec-") as tmp:
            for sub in ("tmp", "v1"):
                d = os.path.join(tmp, "only-" + sub)
                os.makedirs(os.path.join(d, sub, "x"))
                old = os.path.join(d, sub, "x", "draft.obj")
                with open(old, "w") as f:
                    f.write("v 0 0 0\n")
                os.utime(old, (1, 1))  # older than tmp/'s reaping age
                before = self._tree(d)
                p = run([tool("meshfs-convert"), "-q", "--cache-dir", d, "-o",
                         os.path.join(tmp, "out"), EXAMPLES], timeout=300)
                self.assertEqual(p.returncode, 1, p.stderr)
                self.assertIn(f"meshfs-convert: cache: {d} holds some of a cache's names but no "
                              "CACHEDIR.TAG of meshfs, v2/ or lock; refusing to make it a cache "
                              "(give a new or empty folder)\n", p.stderr)
                self.assertEqual(self._tree(d), before)

    def test_a_cache_without_its_tag_is_still_used(self):
        """An empty folder, one holding a tag that names no program and a
        lost+found (a volume made for the cache), or one holding a cache's
        layout (a cache whose CACHEDIR.TAG was deleted) is taken, and
        tagged as meshfs's."""
        with tempfile.TemporaryDirectory(prefix="meshfs-sec-") as tmp:
            empty = os.path.join(tmp, "empty")
            volume = os.path.join(tmp, "volume")
            bare = os.path.join(tmp, "bare")
            os.makedirs(empty)
            os.makedirs(os.path.join(volume, "lost+found"))
            with open(os.path.join(volume, "CACHEDIR.TAG"), "w") as f:
                f.write("Signature: 8a477f597d28d172789f06886806bc55\n")
            os.makedirs(os.path.join(bare, "v2"))
            os.makedirs(os.path.join(bare, "tmp"))
            open(os.path.join(bare, "lock"), "w").close()
            for i, d in enumerate((empty, volume, bare)):
                p = run([tool("meshfs-convert"), "-q", "-f", "vrt", "--cache-dir", d, "-o",
                         os.path.join(tmp, f"out{i}"), EXAMPLES], timeout=300)
                self.assertEqual(p.returncode, 0, p.stderr)
                with open(os.path.join(d, "CACHEDIR.TAG")) as f:
                    self.assertIn("created by meshfs", f.read())


@unittest.skipUnless(IS_ROOT, "needs root: test users, allow_other, chown")
class WriterTest(unittest.TestCase):
    """The worker runs as a model's owner only when nobody else can change
    its bytes, and only on the file the host looked at (review 1, findings
    1 and 2): A's group-writable model that B (in the group) rewrote to name
    A's private file; a world-writable one; a model replaced between the
    host's stat and the worker's open; a batch model swapped for a link."""

    def setUp(self):
        self._tmp = open_tmp()
        self.tmp = self._tmp.name
        self.src = os.path.join(self.tmp, "src")
        os.makedirs(self.src)
        os.chmod(self.src, 0o755)
        self.mnt = os.path.join(self.tmp, "mnt")
        self.cache = os.path.join(self.tmp, "cache")
        if not hasattr(WriterTest, "A"):
            WriterTest.A = make_user("wa")
            WriterTest.B = make_user("wb")
            WriterTest.G = make_group("w", WriterTest.B[0], WriterTest.A[0])

    def tearDown(self):
        self._tmp.cleanup()

    def s(self, *p):
        return os.path.join(self.src, *p)

    def sample(self, m, rel):
        """The statuses of the workers converting rel (slowed), and the
        view's (mode, error text, bytes or errno) once done."""
        reader = subprocess.Popen(["cat", os.path.join(self.mnt, rel)],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            ws = switched_workers(m.proc.pid)
        finally:
            reader.communicate(timeout=60)
        return ws

    def view(self, rel):
        path = os.path.join(self.mnt, rel)
        mode = os.stat(path).st_mode & 0o777
        try:
            err = os.getxattr(path, "user.meshfs.error").decode().replace(rel.split("/")[0] + "/", "")
        except OSError:
            err = None
        try:
            with open(path, "rb") as f:
                got = f.read()
        except OSError as e:
            got = e.errno
        return mode, err, got

    def test_a_model_others_can_write_runs_as_the_worker_user(self):
        import pwd
        A, B, G = self.A, self.B, self.G
        nobody = pwd.getpwnam("nobody")
        root = ("root", 0, 0)
        for top, present in (("x1", True), ("x2", False)):
            folder(self.s(top), 0o755, root)
            folder(self.s(top, "a"), 0o700, A)
            if present:
                put(self.s(top, "a", "priv.mtl"), "newmtl red\nKd 0.25 0.5 0.75\n", 0o600, A)
            folder(self.s(top, "s"), 0o2775, (A[0], A[1], G))
            # A's model, mode 0664 in group G: B (in G) rewrote it to name
            # A's private file; 0666: anyone could have
            body = "mtllib ../a/priv.mtl\nusemtl red\n" + TRIANGLE
            put(self.s(top, "s", "g.obj"), body, 0o664, (A[0], A[1], G))
            put(self.s(top, "s", "o.obj"), body, 0o666, (A[0], A[1], G))
        env = dict(os.environ, MESHFS_TEST_WORKER_SLEEP="2")
        with Mount(self.src, self.mnt, self.cache, "allow_other", env=env) as m:
            ws = self.sample(m, "x1/s/g.fmd")
            self.assertTrue(ws, "no worker seen")
            for st in ws:
                self.assertEqual(st["Uid"].split(), [str(nobody.pw_uid)] * 4)
                self.assertEqual(st["Gid"].split(), [str(G)] * 4)
                self.assertEqual(st["Groups"].split(), [])
            ws = self.sample(m, "x1/s/o.fmd")
            self.assertTrue(ws, "no worker seen")
            for st in ws:
                self.assertEqual(st["Uid"].split(), [str(nobody.pw_uid)] * 4)
                self.assertEqual(st["Gid"].split(), [str(nobody.pw_gid)] * 4)
                self.assertEqual(st["Groups"].split(), [])
            # A's private file is out of reach: the views are those of a
            # reference to a missing file, mode and all
            for n in ("g", "o"):
                for f in ("fmd", "gmf", "vrt"):
                    with self.subTest(model=n, format=f):
                        self.assertEqual(self.view(f"x1/s/{n}.{f}"), self.view(f"x2/s/{n}.{f}"))

    def test_a_model_with_an_acl_runs_as_the_worker_user(self):
        """An ACL may let others write what the mode bits do not show
        (here: B, by name, on A's 0644-looking model)."""
        import pwd
        A, B = self.A, self.B
        nobody = pwd.getpwnam("nobody")
        folder(self.s("s"), 0o755, A)
        put(self.s("s", "m.obj"), TRIANGLE, 0o644, A)
        # user::rw- user:B:rw- group::r-- mask::rw- other::r-- (acl_ea format)
        acl = struct.pack("<I", 2) + b"".join(
            struct.pack("<HHI", tag, perm, ident) for tag, perm, ident in
            ((0x01, 6, 0xFFFFFFFF), (0x02, 6, B[1]), (0x04, 4, 0xFFFFFFFF),
             (0x10, 6, 0xFFFFFFFF), (0x20, 4, 0xFFFFFFFF)))
        try:
            os.setxattr(self.s("s", "m.obj"), "system.posix_acl_access", acl)
        except OSError as e:
            self.skipTest(f"no POSIX ACLs here: {e}")
        env = dict(os.environ, MESHFS_TEST_WORKER_SLEEP="2")
        with Mount(self.src, self.mnt, self.cache, "allow_other", env=env) as m:
            ws = self.sample(m, "s/m.fmd")
        self.assertTrue(ws, "no worker seen")
        for st in ws:
            self.assertEqual(st["Uid"].split(), [str(nobody.pw_uid)] * 4)
            self.assertEqual(st["Gid"].split(), [str(nobody.pw_gid)] * 4)

    @unittest.skipUnless(HOOKS, "needs -Dtest_hooks=true")
    def test_a_model_replaced_after_the_hosts_stat_is_not_converted(self):
        A = self.A
        folder(self.s("s"), 0o755, A)
        put(self.s("s", "m.obj"), TRIANGLE, 0o644, A)
        release = os.path.join(self.tmp, "release")
        env = dict(os.environ, MESHFS_TEST_CONVERT_HOLD="m.obj:" + release)
        with Mount(self.src, self.mnt, self.cache, "allow_other", env=env) as m:
            got = {}

            def reader():
                try:
                    with open(os.path.join(self.mnt, "s", "m.fmd"), "rb") as f:
                        got["bytes"] = f.read()
                except OSError as e:
                    got["errno"] = e.errno
            t = threading.Thread(target=reader)
            t.start()
            deadline = time.time() + 30
            while not os.path.exists(release + ".held") and time.time() < deadline:
                time.sleep(0.02)
            self.assertTrue(os.path.exists(release + ".held"), "the conversion was not held")
            # another file under the name, as a rename (or RENAME_EXCHANGE) does
            put(self.s("s", "new.obj"), TRIANGLE + "v 2 2 2\nf 1 2 4\n", 0o644, A)
            os.rename(self.s("s", "new.obj"), self.s("s", "m.obj"))
            open(release, "w").close()
            t.join(60)
            # the run on the swapped-in file failed as the model replaced;
            # transient, so not remembered: the read's retry converted the
            # file now there, under its own stat
            st = m.stats()
            self.assertEqual((st["conversions"], st["conversion_failures"]), (2, 1))
            with open(m.log) as f:
                self.assertIn("s/m.obj: conversion failed: the model 's/m.obj' was replaced "
                              "during the conversion: not converted", f.read())
            with open(os.path.join(self.mnt, "s", "m.fmd"), "rb") as f:
                self.assertEqual(got, {"bytes": f.read()})

    @unittest.skipUnless(HOOKS, "needs -Dtest_hooks=true")
    def test_meshfs_convert_never_follows_a_model_swapped_for_a_link(self):
        A, B = self.A, self.B
        root = ("root", 0, 0)
        folder(self.s("a"), 0o700, A)
        put(self.s("a", "private.obj"), "v 0 0 0\nv 5 0 0\nv 0 7 0\nf 1 2 3\n", 0o600, A)
        folder(self.s("drop"), 0o1777, root)
        put(self.s("drop", "x.obj"), TRIANGLE, 0o644, B)
        out = os.path.join(self.tmp, "out")
        release = os.path.join(self.tmp, "swapped")
        env = dict(os.environ, MESHFS_TEST_HOLD_OWNER="x.obj:" + release)
        p = subprocess.Popen([tool("meshfs-convert"), "--no-cache", "-q", "-f", "vrt", "-o", out,
                              self.src], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        # planned, and held before its model is opened (meshfs/util.h, "test_hold")
        for _ in range(3000):
            if os.path.exists(release + ".held") or p.poll() is not None:
                break
            time.sleep(0.02)
        self.assertTrue(os.path.exists(release + ".held"), "meshfs-convert never reached x.obj")
        os.unlink(self.s("drop", "x.obj"))
        os.symlink("../a/private.obj", self.s("drop", "x.obj"))
        open(release, "w").close()
        stdout, stderr = p.communicate(timeout=120)
        self.assertNotEqual(p.returncode, 0, stderr)
        self.assertIn("x.obj: not a regular file", stderr)
        vrt = os.path.join(out, "drop", "x.vrt")
        self.assertFalse(os.path.exists(vrt) and b"5" in open(vrt, "rb").read())


if __name__ == "__main__":
    from common import run_tests
    run_tests()
