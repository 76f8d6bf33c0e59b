"""meshfs-convert where a build pipeline puts it: OUTDIR inside, or equal
to, an INPUT folder; a run stopped by a signal."""
import os
import random
import signal
import struct
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import tool  # noqa: E402
from test_convert_incremental import Base, summary, tree  # noqa: E402


class OutdirInInput(Base):
    def test_outdir_inside_input_is_never_an_input(self):
        # `meshfs-convert --copy-other -o assets/out assets`, run as a build
        # step again and again: each run took the last one's outputs for
        # inputs and copied them into out/out/..., one level more a run
        out = os.path.join("src", "out")
        p = self.convert("--copy-other", out=out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(summary(p), (5, 0, 0))
        first = tree(os.path.join(self.tmp, out))
        for _ in range(2):
            p = self.convert("--copy-other", out=out)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(summary(p), (0, 5, 0))
            self.assertEqual(tree(os.path.join(self.tmp, out)), first)
        self.assertNotIn("out", first)
        self.assertIn("crate/crate.gmf", first)
        self.assertIn("crate/textures/crate.png", first)

    def test_outdir_equal_to_input_is_refused(self):
        # views beside the models: the next run named the models' views
        # after the views it found (cone.ply.gmf beside cone.gmf), and the
        # package it wrote was taken for the folder's own and never updated
        before = tree(self.src)
        cone = os.path.join(self.src, "props", "cone.ply")
        for out, given in (("src", self.src), (os.path.join("src", "props"), cone)):
            p = self.convert(out=out, src=given)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(f"OUTDIR {os.path.join(self.tmp, out)} is the ", p.stderr)
            self.assertIn(given + ":", p.stderr)
            self.assertIn("give another folder", p.stderr)
            self.assertEqual(tree(self.src), before)
        # the default OUTDIR, the current folder, with a model in it
        p = subprocess.run([tool("meshfs-convert"), "--cache-dir", self.cache, "cone.ply"],
                           cwd=os.path.join(self.src, "props"), capture_output=True, text=True,
                           timeout=600)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("is the folder of INPUT cone.ply", p.stderr)
        self.assertEqual(tree(self.src), before)


def big_stl(path, triangles, seed):
    """A binary STL whose views take a while to write (the .dem is ~250 B a
    triangle), so a signal can land while one is half written."""
    r = random.Random(seed)
    tri = struct.Struct("<12fH")
    with open(path, "wb") as f:
        f.write(b"\0" * 80 + struct.pack("<I", triangles))
        f.write(b"".join(tri.pack(0, 0, 1, *(r.random() for _ in range(9)), 0)
                         for _ in range(triangles)))


def hidden(root):
    return sorted(os.path.relpath(os.path.join(d, n), root)
                  for d, ds, fs in os.walk(root) for n in ds + fs if n.startswith("."))


class Interrupted(Base):
    """A run stopped by ^C or kill: it wrote each file to a temporary name
    and renamed it, so no final name is ever partial, but the temporary
    files (.meshfs-tmp-*, .meshfs-*/ of the package's views,
    .game_resources.lgepkg.*) stayed in OUTDIR, half written, for
    `rsync -a build/ server:` to ship, and no later run removed them."""

    def setUp(self):
        super().setUp()
        self.big = os.path.join(self.tmp, "big")
        os.mkdir(self.big)
        for k in range(4):
            big_stl(os.path.join(self.big, f"m{k}.stl"), 150000, k)

    def stop_while_writing(self, sig, args, temp):
        """Runs meshfs-convert over big/ and sends sig once a name starting
        with temp is in OUTDIR; returns (returncode, OUTDIR)."""
        out = os.path.join(self.tmp, f"out-{sig}-{temp}")
        argv = [tool("meshfs-convert"), "--no-cache", "-j", "2", "-o", out] + args + [self.big]
        for _ in range(5):  # a run that ended before the signal: again
            p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            seen = False
            while p.poll() is None and not seen:
                seen = os.path.isdir(out) and any(n.startswith(temp) for n in os.listdir(out))
                if seen:
                    p.send_signal(sig)
                else:
                    time.sleep(0.0005)
            p.wait(timeout=600)
            if seen:
                return p.returncode, out
        self.fail(f"never saw {temp}* in {out}")

    def test_signal_leaves_no_temporary_file(self):
        full = os.path.join(self.tmp, "full")
        for args in ([], ["-f", "gmf,lgepkg"]):
            p = subprocess.run([tool("meshfs-convert"), "--no-cache", "-q", "-o", full] + args +
                               [self.big], capture_output=True, text=True, timeout=600)
            self.assertEqual(p.returncode, 0, p.stderr)
        want = tree(full)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            for args, temp in (([], ".meshfs-tmp-"), (["-f", "gmf,lgepkg"], ".meshfs-"),
                               (["-f", "gmf,lgepkg"], ".game_resources.lgepkg.")):
                with self.subTest(sig=sig.name, temp=temp):
                    rc, out = self.stop_while_writing(sig, args, temp)
                    # ended by the signal, as before
                    self.assertEqual(rc, -sig)
                    self.assertEqual(hidden(out), [])
                    # what has its final name is whole
                    for rel, v in tree(out).items():
                        self.assertEqual(v, want[rel], rel)


class IgnoredSignals(Base):
    def test_an_ignored_signal_stays_ignored(self):
        # `nohup meshfs-convert ...` (SIGHUP ignored), or a background job
        # of a script (SIGINT ignored): the signal thread blocked them, so
        # they were queued for its sigwait, and the run ended by the
        # signal it was started to ignore
        env = dict(os.environ, MESHFS_TEST_BATCH_HOLD_START="/src",
                   MESHFS_TEST_BATCH_HOLD_END="/src")  # the run takes 1.3 s at least
        model = os.path.join(self.src, "props", "tetra.stl")
        for sig in (signal.SIGHUP, signal.SIGINT):
            with self.subTest(sig=sig.name):
                out = os.path.join(self.tmp, "out-" + sig.name)
                p = subprocess.Popen(
                    [tool("meshfs-convert"), "--no-cache", "-q", "-f", "gmf", "-o", out, model],
                    env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                    preexec_fn=lambda: signal.signal(sig, signal.SIG_IGN))
                while p.poll() is None:  # from its start to its end
                    p.send_signal(sig)
                    time.sleep(0.05)
                _, err = p.communicate(timeout=600)
                self.assertEqual(p.returncode, 0, err)
                self.assertEqual(os.listdir(out), ["tetra.gmf"])


class NoCacheInterrupted(Base):
    def test_signal_removes_the_private_cache(self):
        # --no-cache's private cache in TMPDIR (the models in flight, -j of
        # them: on a tmpfs, memory) was left by a run stopped by a signal,
        # until a later --no-cache run swept it, if one came
        tmpdir = os.path.join(self.tmp, "tmpdir")
        os.mkdir(tmpdir)
        env = dict(os.environ, TMPDIR=tmpdir, MESHFS_TEST_BATCH_HOLD_END="/src")
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            with self.subTest(sig=sig.name):
                p = subprocess.Popen([tool("meshfs-convert"), "--no-cache", "-q", "-j", "2",
                                      "-o", os.path.join(self.tmp, "out"), self.src], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                # sent once the private cache holds a model's entries
                # (converted, then held 1 s by the test build)
                while p.poll() is None and not any(
                        fs for d, _, fs in os.walk(tmpdir) if os.sep + "v2" + os.sep in d):
                    time.sleep(0.005)
                p.send_signal(sig)
                self.assertEqual(p.wait(timeout=600), -sig)
                self.assertEqual(os.listdir(tmpdir), [])


class CopyOtherSourceChanging(Base):
    def test_file_written_while_copied_is_not_copied(self):
        # a texture rewritten in place (same size) by an exporter while
        # --copy-other copied it: the copy mixed its old and new bytes,
        # under its final name, and the run exited 0
        tex = os.path.join(self.src, "props", "baked.bin")
        chunk = 1 << 20
        with open(tex, "wb") as f:
            f.write(b"A" * (100 * chunk))
        stop = threading.Event()

        def rewrite():
            k = 0
            while not stop.is_set():
                with open(tex, "r+b") as f:
                    for _ in range(100):
                        f.write((b"B" if k % 2 else b"A") * chunk)
                k += 1
        t = threading.Thread(target=rewrite)
        t.start()
        try:
            p = self.convert("--copy-other", "-q", src=os.path.join(self.src, "props"))
        finally:
            stop.set()
            t.join()
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(f"{tex} -> {os.path.join(self.tmp, 'out', 'baked.bin')}: changed while it "
                      "was copied (not copied; run again)\n", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "out", "baked.bin")))
        self.assertEqual(hidden(os.path.join(self.tmp, "out")), [])
        # still, run again: whole
        p = self.convert("--copy-other", "-q", src=os.path.join(self.src, "props"))
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(tex, "rb") as a, open(os.path.join(self.tmp, "out", "baked.bin"), "rb") as b:
            self.assertEqual(a.read(), b.read())


if __name__ == "__main__":
    unittest.main()
