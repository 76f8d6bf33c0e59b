"""The daemon's log (include/meshfs/log.h, meshfs.1 DIAGNOSTICS) and its private
extended attributes (meshfs.1 EXTENDED ATTRIBUTES):

- -o log_level=error|warning|info|debug, default warning: each conversion is
  one info line, a failed model one warning line, the importer's fallback
  reason a debug line; every line about a model names it relative to SRC;
- stderr in the foreground, syslog (facility daemon) once daemonised: checked
  with a unix-datagram listener bound over /dev/log in a private mount
  namespace, so no syslog daemon is needed and the machine's is untouched;
  a listener that stops reading costs counted, dropped lines, not a stalled
  mount;
- a bad level exits 2 naming the option;
- `cp -a MNT OUT` copies no user.meshfs.* attribute (none is listed) while
  each stays readable by name where it applies."""
import errno
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
import unittest

from common import CORPUS, run_tests, tempdir, tool
from mount import Mount

GLTF1 = os.path.join(CORPUS, "glTF", "BoxTextured-glTF-Embedded", "BoxTextured.gltf")
BUILTIN = ("view name 'cube' is an FGE built-in model name")


def read(path):
    with open(path, "rb") as f:
        return f.read()


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(data)


def obj(ntri):
    v, f = [], []
    for t in range(ntri):
        v += [f"v {t} 0 0", f"v {t + 1} 0 0", f"v {t} 1 0"]
        f.append(f"f {3 * t + 1} {3 * t + 2} {3 * t + 3}")
    return "\n".join(v + f) + "\n"


LINE = re.compile(r"^meshfs: (error|warning|info|debug): (.*)$")


def lines(text, level=None):
    """The log lines of a foreground mount's output: [(level, text)]."""
    out = []
    for l in text.splitlines():
        m = LINE.match(l)
        if m and (level is None or m.group(1) == level):
            out.append((m.group(1), m.group(2)))
    return out


class Base(unittest.TestCase):
    def setUp(self):
        self.t = tempdir()
        self.tmp = self.t.name
        self.src = os.path.join(self.tmp, "src")
        self.mnt = os.path.join(self.tmp, "mnt")
        self.cache = os.path.join(self.tmp, "cache")
        write(os.path.join(self.src, "props", "crate.obj"), obj(2))
        write(os.path.join(self.src, "props", "deep", "tri.obj"), obj(1))
        write(os.path.join(self.src, "bad", "broken.obj"), "v 0 0 0\nf 1 2 3\n")
        write(os.path.join(self.src, "bad", "fine.obj"), obj(3))

    def tearDown(self):
        self.t.cleanup()

    def assert_no_private_path(self, text):
        self.assertNotIn(self.src + "/", text)
        self.assertNotIn(self.cache, text)
        self.assertNotIn(os.path.realpath(self.cache), text)


class Levels(Base):
    def test_info_logs_each_conversion_once_relative_to_src(self):
        with Mount(self.src, self.mnt, self.cache, "log_level=info") as m:
            read(os.path.join(self.mnt, "props", "crate.dem"))
            read(os.path.join(self.mnt, "props", "deep", "tri.gmf"))
            read(os.path.join(self.mnt, "props", "crate.vrt"))  # same run: no new line
            with self.assertRaises(OSError) as cm:
                read(os.path.join(self.mnt, "bad", "broken.dem"))
            self.assertEqual(cm.exception.errno, errno.EIO)
            conversions = m.stats()["conversions"]
            out = m.output()
        info = [t for _, t in lines(out, "info")]
        done = sorted(re.match(r"(.*): converted in [0-9]+\.[0-9]{2} s$", t).group(1)
                      for t in info if " converted in " in t)
        self.assertEqual(done, ["props/crate.obj", "props/deep/tri.obj"], out)
        warnings = [t for _, t in lines(out, "warning")]
        failed = [t for t in warnings if "conversion failed" in t]
        self.assertEqual(len(failed), 1, out)
        self.assertTrue(failed[0].startswith("bad/broken.obj: conversion failed: "), failed)
        # every conversion said once, at its level, and nothing else about it
        self.assertEqual(conversions, len(done) + len(failed), out)
        self.assertFalse([t for t in warnings if "converted in" in t], out)
        self.assertFalse([t for _, t in lines(out, "debug")], out)  # info is not debug
        self.assert_no_private_path(out)

    def test_default_is_warning(self):
        with Mount(self.src, self.mnt, self.cache) as m:
            read(os.path.join(self.mnt, "props", "crate.dem"))
            with self.assertRaises(OSError):
                read(os.path.join(self.mnt, "bad", "broken.dem"))
            self.assertEqual(m.stats()["conversions"], 2)
            out = m.output()
        self.assertEqual(lines(out, "info"), [], out)
        self.assertNotIn("converted in", out)
        failed = [t for _, t in lines(out, "warning") if "conversion failed" in t]
        self.assertEqual(len(failed), 1, out)
        self.assertTrue(failed[0].startswith("bad/broken.obj: conversion failed: import failed"), failed)
        # a model without a texture is not a warning (its .tex is white)
        self.assertEqual([t for _, t in lines(out, "warning") if not t.startswith("bad/broken.obj: ")],
                         [], out)
        self.assert_no_private_path(out)

    def test_error_level_hides_model_failures(self):
        with Mount(self.src, self.mnt, self.cache, "log_level=error") as m:
            with self.assertRaises(OSError):
                read(os.path.join(self.mnt, "bad", "broken.dem"))
            self.assertEqual(m.stats()["conversion_failures"], 1)
            out = m.output()
        self.assertNotIn("broken", out)
        self.assertEqual([l for l in lines(out) if l[0] != "error"], [], out)

    def test_debug_says_why_the_native_importer_declined(self):
        if not os.path.exists(GLTF1):
            self.skipTest("assimp-testmodels not installed")
        os.makedirs(os.path.join(self.src, "old"))
        shutil.copy(GLTF1, os.path.join(self.src, "old", "box.gltf"))
        with Mount(self.src, self.mnt, self.cache, "log_level=debug") as m:
            self.assertTrue(read(os.path.join(self.mnt, "old", "box.dem")))
            read(os.path.join(self.mnt, "props", "crate.dem"))
            out = m.output()
        debug = [t for _, t in lines(out, "debug")]
        box = [t for t in debug if t.startswith("old/box.gltf: importer: ")]
        self.assertEqual(len(box), 1, out)
        if "built without cgltf" not in box[0]:
            self.assertRegex(box[0], r"^old/box.gltf: importer: assimp \(native declined: .*glTF 1\.0")
        crate = [t for t in debug if t.startswith("props/crate.obj: importer: ")]
        self.assertEqual(len(crate), 1, out)
        self.assertIn(crate[0].split(": importer: ")[1], ("native obj", "assimp (native declined: "
                      "built without cgltf/fast_obj (scripts/fetch-meshoptimizer))"))
        # debug includes info
        self.assertIn("old/box.gltf", " ".join(t for _, t in lines(out, "info")))
        self.assert_no_private_path(out)

    def test_dash_d_means_debug_unless_told(self):
        os.makedirs(self.mnt)
        for opts, want in ((["-d"], True), (["-d", "-o", "log_level=info"], False)):
            cache = self.cache + str(len(opts))
            log = os.path.join(self.tmp, "d.log")
            with open(log, "w") as lf:
                p = subprocess.Popen([tool("meshfs")] + opts + ["-o", "cache_dir=" + cache, self.src, self.mnt],
                                     stdout=lf, stderr=subprocess.STDOUT)
            try:
                deadline = time.time() + 20
                while not os.path.ismount(self.mnt):
                    self.assertIsNone(p.poll(), read(log))
                    self.assertLess(time.time(), deadline)
                    time.sleep(0.02)
                read(os.path.join(self.mnt, "props", "crate.dem"))
            finally:
                subprocess.run(["fusermount3", "-u", self.mnt], capture_output=True)
                p.wait(timeout=20)
            out = read(log).decode(errors="replace")
            self.assertIn("meshfs: info: props/crate.obj: converted in", out)
            self.assertEqual("meshfs: debug: props/crate.obj: importer: " in out, want, opts)

    def test_bad_level_exits_2_naming_the_option(self):
        os.makedirs(self.mnt)
        for bad in ("loud", "", "INFO", "warn"):
            p = subprocess.run([tool("meshfs"), "-f", "-o", f"log_level={bad},cache_dir={self.cache}",
                                self.src, self.mnt], capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(f"meshfs: -o log_level={bad}: expected error, warning, info or debug", p.stderr)
            self.assertFalse(os.path.ismount(self.mnt))

    def test_a_missing_sandbox_layer_is_one_warning(self):
        # a worker that reports Landlock missing, as on a kernel without it
        # (security.md, S4): the daemon and meshfs-convert each say it once,
        # with the level once ("meshfs: warning: warning: ..." was printed)
        fake = os.path.join(self.tmp, "fake-worker")
        with open(fake, "w") as f:
            f.write(textwrap.dedent(f"""\
                #!/bin/sh
                if [ "$1" = --sandbox-status ]; then
                  "{tool('meshfs-worker')}" --sandbox-status | sed 's/^landlock: .*/landlock: unsupported (test)/'
                  exit 0
                fi
                exec "{tool('meshfs-worker')}" "$@"
                """))
        os.chmod(fake, 0o755)
        env = dict(os.environ, MESHFS_WORKER=fake)
        text = ("Landlock is not available on this kernel, so conversions run with less "
                "confinement (docs/security.md)")
        with Mount(self.src, self.mnt, self.cache, env=env) as m:
            read(os.path.join(self.mnt, "props", "crate.dem"))
            out = m.output()
        self.assertEqual([t for _, t in lines(out, "warning") if "Landlock" in t], [text], out)
        p = subprocess.run([tool("meshfs-convert"), "-q", "--cache-dir", self.cache, "-o",
                            os.path.join(self.tmp, "out"), os.path.join(self.src, "props")],
                           capture_output=True, text=True, timeout=120, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual([l for l in p.stderr.splitlines() if "Landlock" in l],
                         ["meshfs-convert: warning: " + text], p.stderr)

    def test_help_lists_the_option(self):
        p = subprocess.run([tool("meshfs"), "--help"], capture_output=True, text=True, timeout=30)
        self.assertIn("-o log_level=LEVEL", p.stdout)
        self.assertIn("syslog", p.stdout)


# Runs inside `unshare -m`: /dev/log (absent, or the machine's) replaced by
# a listener's socket in this mount namespace only, then a daemonised mount.
SYSLOG_PROBE = textwrap.dedent(r"""
    import json, os, socket, subprocess, sys, threading, time
    meshfs, src, mnt, cache, tmp, mode = sys.argv[1:7]
    def sh(*a):
        subprocess.run(a, check=True, capture_output=True)
    sh("mount", "--make-rprivate", "/")
    sock = os.path.join(tmp, "log.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(sock)
    if not os.path.exists("/dev/log"):
        # a private /dev: a tmpfs holding the old one's entries, bound back
        old = os.path.join(tmp, "olddev")
        os.makedirs(old)
        sh("mount", "--rbind", "/dev", old)
        sh("mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", "/dev")
        for name in os.listdir(old):
            o, n = os.path.join(old, name), os.path.join("/dev", name)
            if os.path.islink(o):
                os.symlink(os.readlink(o), n)
            elif os.path.isdir(o):
                os.makedirs(n)
                sh("mount", "--rbind", o, n)
            else:
                open(n, "w").close()
                sh("mount", "--bind", o, n)
        open("/dev/log", "w").close()
    sh("mount", "--bind", sock, "/dev/log")
    msgs = []
    def listen():
        while True:
            msgs.append(s.recv(65536).decode(errors="replace"))
    def read_views(names):
        out = []
        for v in names:
            try:
                with open(os.path.join(mnt, v), "rb") as f:
                    out.append([v, len(f.read())])
            except OSError as e:
                out.append([v, -e.errno])
        return out
    if mode == "reading":  # a syslog daemon that keeps up
        threading.Thread(target=listen, daemon=True).start()
    os.makedirs(mnt, exist_ok=True)
    level = "info" if mode == "reading" else "debug"
    p = subprocess.run([meshfs, "-o", f"log_level={level},cache_dir=" + cache, src, mnt],
                       capture_output=True, text=True, timeout=60)
    res = {"rc": p.returncode, "stderr": p.stderr, "read": [], "mounted": os.path.ismount(mnt)}
    try:
        if mode == "reading":
            res["read"] = read_views(["props/crate.dem", "bad/broken.dem"])
        else:
            # nobody reads /dev/log: its queue (10 datagrams) fills, and the
            # mount must go on regardless
            stuck = sorted(f"many/m{i}.dem" for i in range(8))
            t = threading.Thread(target=lambda: res["read"].extend(read_views(stuck)), daemon=True)
            t0 = time.time()
            t.start()
            t.join(60)
            res["hung"] = t.is_alive()
            res["secs"] = time.time() - t0
            threading.Thread(target=listen, daemon=True).start()
            time.sleep(0.3)
            res["queued"] = len(msgs)  # what the full queue held
            res["read"] += read_views(["props/crate.dem"])
        time.sleep(0.5)  # anything after the conversions' lines
    finally:
        subprocess.run(["fusermount3", "-u", mnt], capture_output=True)
    res["msgs"] = list(msgs)
    print(json.dumps(res))
""")


class Syslog(Base):
    def probe(self, mode):
        probe = os.path.join(self.tmp, "probe.py")
        with open(probe, "w") as f:
            f.write(SYSLOG_PROBE)
        p = subprocess.run(["unshare", "-m", sys.executable, probe, tool("meshfs"), self.src, self.mnt,
                            self.cache, self.tmp, mode], capture_output=True, text=True, timeout=180)
        if p.returncode != 0 and "unshare" in p.stderr:
            self.skipTest("no private mount namespace here: " + p.stderr.strip())
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def test_daemonised_mount_logs_to_syslog(self):
        res = self.probe("reading")
        self.assertEqual((res["rc"], res["mounted"]), (0, True), res)
        # detached: nothing on the terminal after the mount
        self.assertEqual(res["stderr"], "", res)
        self.assertEqual(res["read"][1], ["bad/broken.dem", -errno.EIO], res)
        self.assertGreater(res["read"][0][1], 0, res)
        msgs = res["msgs"]
        # RFC 3164 as glibc sends it: <facility*8+severity>, daemon = 3,
        # info 6, warning 4
        conv = [m for m in msgs if "converted in" in m]
        failed = [m for m in msgs if "conversion failed" in m]
        self.assertEqual((len(conv), len(failed)), (1, 1), msgs)
        self.assertRegex(conv[0], r"^<30>.*? meshfs\[\d+\]: props/crate\.obj: converted in [0-9.]+ s$")
        self.assertRegex(failed[0], r"^<28>.*? meshfs\[\d+\]: bad/broken\.obj: conversion failed: import failed")
        for m in msgs:
            self.assertRegex(m, r"^<(28|30)>")  # nothing at debug level
            self.assertNotIn("dropped", m)
            self.assertNotIn("info:", m)  # the level is the priority, not text
            self.assert_no_private_path(m)


    def test_a_syslog_that_stops_reading_does_not_stop_the_mount(self):
        for i in range(8):
            write(os.path.join(self.src, "many", f"m{i}.obj"), obj(i + 1))
        res = self.probe("stuck")
        self.assertEqual((res["rc"], res["mounted"]), (0, True), res)
        self.assertFalse(res["hung"], res)
        self.assertEqual(len(res["read"]), 9, res)
        self.assertTrue(all(n > 0 for _, n in res["read"]), res)
        # 8 conversions at debug level say 3 lines each, more than the queue
        # holds (11 datagrams by default): the rest were dropped, and the next line that got through says so
        # first, as a warning
        msgs = res["msgs"]
        self.assertLess(res["queued"], 8 * 3, msgs)  # the queue holds net.unix.max_dgram_qlen + 1
        notes = [m for m in msgs if "dropped" in m]
        self.assertEqual(len(notes), 1, msgs)
        self.assertRegex(notes[0], r"^<28>.*? meshfs\[\d+\]: \d+ log lines? dropped: syslog was not reading$")
        self.assertEqual(msgs.index(notes[0]), res["queued"], msgs)  # the first line after
        dropped = int(re.search(r": (\d+) log line", notes[0]).group(1))
        self.assertGreaterEqual(dropped + res["queued"], 8 * 3, msgs)  # none lost uncounted
        self.assertTrue(any(re.match(r"^<30>.*: props/crate\.obj: converted in ", m) for m in msgs), msgs)
        self.assertTrue(any(re.match(r"^<31>.*: props/crate\.obj: importer: ", m) for m in msgs), msgs)


class Xattrs(Base):
    def test_cp_a_copies_no_private_attribute(self):
        if not shutil.which("getfattr"):
            self.skipTest("getfattr missing (Debian package attr; scripts/setup installs it)")
        write(os.path.join(self.src, "cube.obj"), obj(1))  # an FGE built-in name: warning
        probe = os.path.join(self.tmp, "probe")
        open(probe, "w").close()
        try:
            os.setxattr(probe, "user.probe", b"1")
        except OSError:
            self.skipTest("no user xattrs on " + self.tmp)
        out = os.path.join(self.tmp, "out")
        with Mount(self.src, self.mnt, self.cache, "hide_failed") as m:
            pkg = os.path.join(self.mnt, "bad", "game_resources.lgepkg")
            self.assertTrue(read(pkg))  # packs fine.obj, leaves broken.obj out
            # each attribute is there by name...
            self.assertIn("left out", os.getxattr(pkg, "user.meshfs.error").decode())
            self.assertIn("import failed", os.getxattr(os.path.join(self.mnt, "bad", "broken.obj"),
                                                       "user.meshfs.error").decode())
            self.assertIn(BUILTIN, os.getxattr(os.path.join(self.mnt, "cube.fmd"),
                                               "user.meshfs.warning").decode())
            self.assertIn("conversions=", os.getxattr(self.mnt, "user.meshfs.stats").decode())
            # ...stats on the mount root only...
            for sub in ("props", "bad", "props/deep"):
                with self.assertRaises(OSError) as cm:
                    os.getxattr(os.path.join(self.mnt, sub), "user.meshfs.stats")
                self.assertEqual(cm.exception.errno, errno.ENODATA, sub)
            # ...and listed nowhere
            for d, dirs, files in os.walk(self.mnt):
                for name in [d] + [os.path.join(d, f) for f in files]:
                    self.assertEqual(os.listxattr(name), [], name)
            cp = subprocess.run(["cp", "-a", self.mnt, out], capture_output=True, text=True, timeout=300)
            self.assertEqual((cp.returncode, cp.stderr), (0, ""))
            m.alive()
        self.assertTrue(os.path.isfile(os.path.join(out, "bad", "game_resources.lgepkg")))
        self.assertTrue(os.path.isfile(os.path.join(out, "cube.fmd")))
        self.assertTrue(os.path.isfile(os.path.join(out, "bad", "broken.obj")))
        self.assertFalse(os.path.exists(os.path.join(out, "bad", "broken.dem")))  # hide_failed
        g = subprocess.run(["getfattr", "-R", "-d", "-m", "-", "--absolute-names", out],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(g.returncode, 0, g.stderr)
        self.assertNotIn("meshfs", g.stdout + g.stderr)
        # the control: getfattr does see a user attribute on this file system
        os.setxattr(os.path.join(out, "cube.fmd"), "user.meshfs.control", b"x")
        g = subprocess.run(["getfattr", "-R", "-d", "--absolute-names", out],
                           capture_output=True, text=True, timeout=60)
        self.assertIn("user.meshfs.control", g.stdout)


if __name__ == "__main__":
    run_tests()
