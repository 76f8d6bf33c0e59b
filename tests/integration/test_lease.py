"""No user can hold the daemon's threads (docs/security.md, "Request
threads"; issue 33 item 2): a plain file under a lease is opened without
blocking a request thread, and one user's requests take at most a bounded
share of them.

Needs root (test users, an allow_other mount).  Test users come from
test_security's helpers and are removed at the end."""
import os
import subprocess
import sys
import threading
import time
import unittest

import test_security
from mount import Mount
from test_security import IS_ROOT, as_user, make_user, open_tmp

tearDownModule = test_security.tearDownModule

# Takes a write lease (F_SETLEASE, F_WRLCK) on each file named, ignoring
# SIGIO (the lease-break signal, whose default would end it), says
# "ready", and keeps the leases until a line comes on stdin.
LEASE_HOLDER = r"""
import fcntl, os, signal, sys
signal.signal(signal.SIGIO, signal.SIG_IGN)
fds = []
for p in sys.argv[1:]:
    fd = os.open(p, os.O_RDONLY)
    fcntl.fcntl(fd, 1024, fcntl.F_WRLCK)  # F_SETLEASE
    fds.append(fd)
print("ready", flush=True)
sys.stdin.readline()
for fd in fds:
    fcntl.fcntl(fd, 1024, fcntl.F_UNLCK)
    os.close(fd)
print("released", flush=True)
sys.stdin.readline()
"""

# Takes a write lease on each file named, as LEASE_HOLDER, then lets go of
# one file per line of stdin that names it ("released" after each).
PICKY_HOLDER = r"""
import fcntl, os, signal, sys
signal.signal(signal.SIGIO, signal.SIG_IGN)
fds = {}
for p in sys.argv[1:]:
    fds[p] = os.open(p, os.O_RDONLY)
    fcntl.fcntl(fds[p], 1024, fcntl.F_WRLCK)  # F_SETLEASE
print("ready", flush=True)
for line in sys.stdin:
    fd = fds.pop(line.strip())
    fcntl.fcntl(fd, 1024, fcntl.F_UNLCK)
    os.close(fd)
    print("released", flush=True)
"""

# Opens every file named at once, one thread each, and prints each one's
# bytes in hex (or its error) on a line of its own once all are done.
OPENER = r"""
import sys, threading
out = {}
def read(p):
    try:
        with open(p, "rb") as f:
            out[p] = f.read().hex()
    except OSError as e:
        out[p] = "error: " + str(e)
ts = [threading.Thread(target=read, args=(p,)) for p in sys.argv[1:]]
for t in ts:
    t.start()
for t in ts:
    t.join()
for p in sys.argv[1:]:
    print(p + "\t" + out[p])
"""

# User A's reader, started beforehand so that only the read is timed (not
# the start of a process, on a machine that may be busy): on each line of
# stdin, reads the file named as cat does (open, read to the end) and prints
# the seconds it took and the bytes in hex.
READER = r"""
import sys, time
for _ in sys.stdin:
    t0 = time.monotonic()
    try:
        with open(sys.argv[1], "rb") as f:
            data = f.read()
        print(time.monotonic() - t0, data.hex(), flush=True)
    except OSError as e:
        print(time.monotonic() - t0, "error:", e, flush=True)
"""

NFILES = 70  # more than the mount's 64 request threads


@unittest.skipUnless(IS_ROOT, "needs root (test users, allow_other)")
class LeaseFloodTest(unittest.TestCase):
    def setUp(self):
        self._tmp = open_tmp()
        self.tmp = self._tmp.name
        self.src = os.path.join(self.tmp, "src")
        self.mnt = os.path.join(self.tmp, "mnt")
        self.cache = os.path.join(self.tmp, "cache")
        os.makedirs(self.src)
        os.chmod(self.src, 0o755)
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
            for f in (p.stdin, p.stdout, p.stderr):
                f.close()
        self._tmp.cleanup()

    def start(self, args):
        p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        self.procs.append(p)
        return p

    def users(self, tag):
        """A owns a/notes.txt; B owns the folder b/.  tag: the test's own
        (make_user names users by process)."""
        _, auid, agid = make_user(tag + "a")
        _, buid, bgid = make_user(tag + "b")
        adir, bdir = os.path.join(self.src, "a"), os.path.join(self.src, "b")
        os.makedirs(adir)
        os.makedirs(bdir)
        os.chown(bdir, buid, bgid)
        self.write(os.path.join(adir, "notes.txt"), "A's own notes\n", auid, agid)
        return (auid, agid), (buid, bgid), bdir

    def write(self, path, text, uid, gid):
        with open(path, "w") as f:
            f.write(text)
        os.chown(path, uid, gid)

    def flood(self, a, b, leased, opened):
        """B holds write leases on `leased` (ignoring the break) and opens
        `opened` through the mount, all at once; A reads a/notes.txt
        meanwhile, which must take under 0.1 s and give A's bytes.  Then B
        lets go.  Returns {path B opened: hex bytes or error}."""
        reader = self.start(as_user(*a, [sys.executable, "-c", READER,
                                         os.path.join(self.mnt, "a", "notes.txt")]))
        holder = self.start(as_user(*b, [sys.executable, "-c", LEASE_HOLDER] + leased))
        if holder.stdout.readline().strip() != "ready":
            self.fail("the lease holder failed: " + holder.communicate()[1])
        opener = self.start(as_user(*b, [sys.executable, "-c", OPENER] + opened))
        # every open has reached the daemon and found its lease (the holder
        # ignores the break: the kernel would wait 45 s, lease-break-time)
        time.sleep(1.5)
        self.assertIsNone(opener.poll())
        reader.stdin.write("go\n")
        reader.stdin.flush()
        line = [None]
        t = threading.Thread(target=lambda: line.__setitem__(0, reader.stdout.readline()))
        t.start()
        t.join(5)
        # B's opens still wait for the holder, as they would on a local disk
        self.assertIsNone(opener.poll())
        holder.stdin.write("release\n")
        holder.stdin.flush()
        self.assertEqual(holder.stdout.readline().strip(), "released")
        out, err = opener.communicate(timeout=120)
        holder.stdin.write("exit\n")
        holder.stdin.flush()
        holder.wait(timeout=10)
        t.join()
        reader.stdin.close()
        reader.wait(timeout=10)
        self.assertIsNotNone(line[0], "A's read took over 5 s while B held leases")
        took, data = line[0].split(" ", 1)
        self.assertLess(float(took), 0.1, f"A's read took {float(took):.3f} s while B held leases")
        self.assertEqual(data.strip(), "A's own notes\n".encode().hex())
        self.assertEqual(opener.returncode, 0, err)
        return dict(l.split("\t", 1) for l in out.splitlines())

    def test_leases_on_plain_files_do_not_stall_another_user(self):
        # the attack: more leased files opened at once than the
        # mount has request threads
        a, b, bdir = self.users("lf")
        names = [f"f{i:02d}.txt" for i in range(NFILES)]
        for i, n in enumerate(names):
            self.write(os.path.join(bdir, n), f"B's file {i}\n", *b)
        with Mount(self.src, self.mnt, self.cache, "allow_other") as m:
            got = self.flood(a, b, [os.path.join(bdir, n) for n in names],
                             [os.path.join(self.mnt, "b", n) for n in names])
            self.assertEqual(got, {os.path.join(self.mnt, "b", n): f"B's file {i}\n".encode().hex()
                                   for i, n in enumerate(names)})
            # each open waited off the request threads, none failed
            st = m.stats()
            self.assertEqual(st["lease_waits"], NFILES)
            self.assertEqual(st["lease_waiting"], 0)
            self.assertTrue(m.alive())

    def test_views_waiting_on_leased_dependencies_hold_only_their_users_share(self):
        # the same flood through views: each model's material is under a
        # lease, so each conversion waits for it (a worker reading a
        # dependency waits as any reader does), and each open of a view
        # holds a request thread until its conversion ends.  B may hold a
        # quarter of the threads (share_cap), no more; the rest of B's
        # requests wait in B's queue, holding none.
        a, b, bdir = self.users("lv")
        obj = "mtllib m{0:02d}.mtl\nusemtl red\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"
        for i in range(NFILES):
            self.write(os.path.join(bdir, f"m{i:02d}.obj"), obj.format(i), *b)
            self.write(os.path.join(bdir, f"m{i:02d}.mtl"), "newmtl red\nKd 1 0 0\n", *b)
        ctl = os.path.join(self.src, "ctl")
        os.makedirs(ctl)
        self.write(os.path.join(ctl, "m00.obj"), obj.format(0), *b)
        self.write(os.path.join(ctl, "m00.mtl"), "newmtl red\nKd 1 0 0\n", *b)
        with Mount(self.src, self.mnt, self.cache, "allow_other") as m:
            views = [os.path.join(self.mnt, "b", f"m{i:02d}.vrt") for i in range(NFILES)]
            got = self.flood(a, b, [os.path.join(bdir, f"m{i:02d}.mtl") for i in range(NFILES)],
                             views)
            with open(os.path.join(self.mnt, "ctl", "m00.vrt"), "rb") as f:
                want = f.read().hex()
            self.assertTrue(want)
            self.assertEqual(got, {v: want for v in views})
            st = m.stats()
            self.assertEqual(st["share_cap"], 16)
            self.assertGreater(st["share_queued"], 0)
            self.assertTrue(m.alive())

    def test_a_view_of_a_leased_model_waits_for_the_lease(self):
        # the model itself under a lease: its hash cannot be read yet, so
        # the open of its view waits for the holder (as an open of the
        # model would), off the request threads, instead of failing (EIO,
        # "Resource temporarily unavailable")
        a, b, bdir = self.users("lm")
        obj = "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"
        self.write(os.path.join(bdir, "m.obj"), obj, *b)
        ctl = os.path.join(self.src, "ctl")
        os.makedirs(ctl)
        self.write(os.path.join(ctl, "m.obj"), obj, *b)
        with Mount(self.src, self.mnt, self.cache, "allow_other") as m:
            view = os.path.join(self.mnt, "b", "m.vrt")
            got = self.flood(a, b, [os.path.join(bdir, "m.obj")], [view])
            with open(os.path.join(self.mnt, "ctl", "m.vrt"), "rb") as f:
                want = f.read().hex()
            self.assertTrue(want)
            self.assertEqual(got, {view: want})
            self.assertEqual(m.stats()["lease_waits"], 1)
            # retried many times a second, but not logged each time
            self.assertNotIn("temporarily unavailable", m.output())


    def test_a_conversion_never_holds_the_lease_waiter(self):
        # B's model and its material are both leased; A opens the view (it
        # waits for the model's lease) and one of B's leased plain files.
        # B lets go of the model only: the view's open now converts, and the
        # conversion waits for the material's lease.  That wait must not be
        # on the one thread that retries every waiting open: B then lets go
        # of the plain file, and A's open of it must end at once.
        a, b, bdir = self.users("lw")
        model, mtl, plain = (os.path.join(bdir, n) for n in ("m.obj", "m.mtl", "f.txt"))
        self.write(model, "mtllib m.mtl\nusemtl red\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n", *b)
        self.write(mtl, "newmtl red\nKd 1 0 0\n", *b)
        self.write(plain, "B's plain file\n", *b)
        with Mount(self.src, self.mnt, self.cache, "allow_other") as m:
            holder = self.start(as_user(*b, [sys.executable, "-c", PICKY_HOLDER, model, mtl, plain]))
            if holder.stdout.readline().strip() != "ready":
                self.fail("the lease holder failed: " + holder.communicate()[1])
            view_reader = self.start(as_user(*a, [sys.executable, "-c", OPENER,
                                                  os.path.join(self.mnt, "b", "m.vrt")]))
            plain_reader = self.start(as_user(*a, [sys.executable, "-c", READER,
                                                   os.path.join(self.mnt, "b", "f.txt")]))
            time.sleep(1.0)
            self.assertIsNone(view_reader.poll())
            plain_reader.stdin.write("go\n")
            plain_reader.stdin.flush()
            time.sleep(0.5)
            for path in (model, plain):  # the model first: its open converts
                holder.stdin.write(path + "\n")
                holder.stdin.flush()
                self.assertEqual(holder.stdout.readline().strip(), "released")
                time.sleep(0.5)
            line = [None]
            t = threading.Thread(target=lambda: line.__setitem__(0, plain_reader.stdout.readline()))
            t.start()
            t.join(5)
            holder.stdin.write(mtl + "\n")  # and the material: the view converts
            holder.stdin.flush()
            t.join()
            out, err = view_reader.communicate(timeout=60)
            holder.stdin.close()
            holder.wait(timeout=10)
            plain_reader.stdin.close()
            plain_reader.wait(timeout=10)
            took, data = line[0].split(" ", 1)
            # it waited from "go" until its lease went, 0.5 s after the model's
            self.assertLess(float(took), 1.5, "the plain file's open waited for a conversion")
            self.assertEqual(data.strip(), "B's plain file\n".encode().hex())
            self.assertEqual(view_reader.returncode, 0, err)
            self.assertNotIn("error", out)
            self.assertEqual(m.stats()["lease_waits"], 2)


if __name__ == "__main__":
    unittest.main()
