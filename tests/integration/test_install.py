"""Issue 12, install and mount: `meson install --destdir` from the test's
build directory, then the installed files, the man pages (rendered and
linted, and agreeing with --help and README), an fstab round trip through
mount.fuse3 with the INSTALLED meshfs, auto_unmount after kill -9, the
non-empty mount point warning, unknown options and --version."""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from common import BUILD, SOURCE, tool
from mount import Mount

EXAMPLES = os.path.join(SOURCE, "examples", "assets")


def sh(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=300, **kw)


def no_leak_check_env():
    """For a mount refused over an unknown option: libfuse 3.17.2's
    fuse_session_new leaves the mount options it parsed allocated when it
    fails on one (fuse_opt_add_arg in parse_mount_opts), which
    LeakSanitizer reports at exit in the ASan build.  Not meshfs's memory,
    and the process is ending."""
    asan = os.environ.get("ASAN_OPTIONS", "")
    return dict(os.environ, ASAN_OPTIONS=(asan + ":" if asan else "") + "detect_leaks=0")


def installed_map():
    p = sh(["meson", "introspect", BUILD, "--installed"])
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def slurp(path):
    with open(path) as f:
        return f.read()


def mounts_at(mnt):
    """Lines of /proc/self/mountinfo at mnt (os.path.ismount cannot tell: it
    says False for a dead FUSE mount, whose stat fails with ENOTCONN)."""
    with open("/proc/self/mountinfo") as f:
        return [l for l in f if l.split()[4] == mnt]


class Installed(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory(prefix="meshfs-install-")
        cls.dest = os.path.join(cls._tmp.name, "dest")
        p = sh(["meson", "install", "-C", BUILD, "--no-rebuild", "--quiet",
                "--skip-subprojects", "fuse3", "--destdir", cls.dest])
        assert p.returncode == 0, p.stdout + p.stderr
        cls.installed = [cls.dest + v for v in installed_map().values()]
        cls.files = {os.path.basename(v): v for v in cls.installed}
        cls.prefix = os.path.dirname(os.path.dirname(cls.files["meshfs"]))

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def test_files(self):
        for name, sub in [("meshfs", "bin"), ("meshfs-convert", "bin"), ("meshfs-inspect", "bin"),
                          ("meshfs-worker", "libexec"), ("meshfs.1", "share/man/man1"),
                          ("meshfs-convert.1", "share/man/man1"), ("meshfs-inspect.1", "share/man/man1"),
                          ("meshfs-cache", "bin"), ("meshfs-cache.1", "share/man/man1")]:
            path = os.path.join(self.prefix, sub, name)
            self.assertTrue(os.path.isfile(path), path)
            if sub != "share/man/man1":
                self.assertTrue(os.access(path, os.X_OK), path)
        # --skip-subprojects fuse3: no libfuse headers or pkg-config file
        self.assertFalse(os.path.exists(os.path.join(self.prefix, "include", "fuse3")))

    def man_pages(self):
        d = os.path.join(self.prefix, "share", "man", "man1")
        return [os.path.join(d, n) for n in ("meshfs.1", "meshfs-convert.1", "meshfs-inspect.1",
                                             "meshfs-cache.1")]

    def test_man_renders_without_warnings(self):
        for page in self.man_pages():
            p = sh(["man", "-l", page], env=dict(os.environ, MANPAGER="cat", PAGER="cat", MANWIDTH="80"))
            self.assertEqual(p.returncode, 0, page + p.stderr)
            self.assertIn("EXIT STATUS", p.stdout)
            self.assertIn("EXAMPLES", p.stdout)
            p = sh(["groff", "-ww", "-mandoc", "-Tutf8", page])
            self.assertEqual((p.returncode, p.stderr), (0, ""), page)
            if shutil.which("mandoc"):
                p = sh(["mandoc", "-T", "lint", "-W", "warning", page])
                # the only note allowed: the system's mandoc.db is stale
                lines = [l for l in p.stderr.splitlines() if "mandoc.db" not in l] + p.stdout.splitlines()
                self.assertEqual(lines, [], page)

    def man_text(self, name):
        p = sh(["man", "-l", os.path.join(self.prefix, "share/man/man1", name)],
               env=dict(os.environ, MANPAGER="cat", MANWIDTH="200"))
        return re.sub(r".\x08", "", p.stdout)

    def test_meshfs_man_and_readme_list_every_option(self):
        help_text = sh([self.files["meshfs"], "--help"],
                       env=dict(os.environ, LD_LIBRARY_PATH=self.libdir())).stdout
        ours = help_text.split("FUSE options:")[0]
        opts = set(re.findall(r"-o (\w+)", ours))
        self.assertGreater(len(opts), 15, ours)
        man = self.man_text("meshfs.1")
        with open(os.path.join(SOURCE, "README.md")) as f:
            readme = f.read()
        for o in opts:
            self.assertIn(o, man, o)
            self.assertIn(o, readme, o)
        for needle in ["user.meshfs.error", "user.meshfs.warning", "user.meshfs.stats",
                       "/var/cache/meshfs", ".cache/meshfs", "XDG_CACHE_HOME", "FILES", "fuse.meshfs"]:
            self.assertIn(needle, man, needle)
        # defaults as --help states them
        for default in ["max-size, else 2G", "default 60", "default 4G", "default\n                             game_resources"]:
            self.assertIn(default, ours)
        for default in ["max-size’ stored in the cache folder, else 2G", "Default: 60",
                        "Default: 4G", "game_resources"]:
            self.assertIn(default, re.sub(r"\s+", " ", man))

    def test_help_names_the_program_and_both_default_caches(self):
        """Issue 32 item 10: run by its full path (as mount(8) runs it),
        meshfs --help says "usage: meshfs", and gives the cache folder a user
        and root get, as the man page and README do."""
        p = sh([self.files["meshfs"], "--help"], env=dict(os.environ, LD_LIBRARY_PATH=self.libdir()))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(p.stdout.startswith("usage: meshfs [options] SRC MNT\n"), p.stdout[:80])
        self.assertNotIn(self.prefix, p.stdout)
        flat = re.sub(r"\s+", " ", p.stdout)
        self.assertIn("-o cache_dir=DIR default ${XDG_CACHE_HOME:-$HOME/.cache}/meshfs, "
                      "/var/cache/meshfs for root", flat)
        man = re.sub(r"\s+", " ", self.man_text("meshfs.1"))
        self.assertIn("Default: ${XDG_CACHE_HOME:-$HOME/.cache}/meshfs, /var/cache/meshfs for root", man)
        readme = re.sub(r"\s+", " ", slurp(os.path.join(SOURCE, "README.md")))
        self.assertIn("`${XDG_CACHE_HOME:-$HOME/.cache}/meshfs`, `/var/cache/meshfs` for root", readme)
        for name in ("meshfs-convert", "meshfs-inspect", "meshfs-cache"):
            p = sh([self.files[name], "--help"])
            self.assertTrue(p.stdout.startswith("usage: " + name + " "), (name, p.stdout[:80]))
        for name in ("meshfs-convert", "meshfs-cache"):
            flat = re.sub(r"\s+", " ", sh([self.files[name], "--help"]).stdout)
            self.assertRegex(flat, r"\$\{XDG_CACHE_HOME:-\$HOME/\.cache\}/meshfs, (or )?/var/cache/meshfs for root")

    def test_readme_options_table_has_every_option(self):
        """Issue 32 item 9: the mount options are a grouped table (name,
        default, meaning) with a row naming every option --help lists."""
        help_text = sh([self.files["meshfs"], "--help"],
                       env=dict(os.environ, LD_LIBRARY_PATH=self.libdir())).stdout
        # the options meshfs --help lists, one a line
        opts = set(re.findall(r"^ +-o (\w+)", help_text.split("FUSE options:")[0], re.M))
        self.assertGreater(len(opts), 30, help_text)
        readme = slurp(os.path.join(SOURCE, "README.md"))
        rows = [l for l in readme.splitlines() if l.startswith("| ")]
        header = rows.index("| Option | Default | Meaning |")
        table, named = [], set()
        for l in rows[header + 1:]:
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", l.strip()[1:-1])]
            if len(cells) != 3:
                break
            table.append(cells)
            named |= set(re.findall(r"`(\w+)", cells[0]))
        self.assertEqual(opts - named, set())
        groups = [c[0] for c in table if c[0].startswith("**")]
        self.assertGreaterEqual(len(groups), 4, groups)
        for name, default, meaning in table:
            if not name.startswith("**"):
                self.assertTrue(default and meaning, name)

    def test_readme_examples_name_real_files(self):
        readme = slurp(os.path.join(SOURCE, "README.md"))
        named = set(re.findall(r"[`/ ]([a-z]+/[a-z]+\.(?:obj|gltf|dae|ply|stl|gmf|dem))\b", readme))
        self.assertIn("crate/crate.obj", named)
        for rel in named:
            model = os.path.splitext(rel)[0]
            self.assertTrue(any(os.path.exists(os.path.join(EXAMPLES, model + ext))
                                for ext in (".obj", ".gltf", ".dae", ".ply", ".stl")), rel)

    def test_tool_man_pages_list_every_option(self):
        for name in ("meshfs-convert", "meshfs-inspect", "meshfs-cache"):
            help_text = sh([self.files[name], "--help"]).stdout
            opts = set(re.findall(r"(--[a-z][a-z-]+)", help_text))
            self.assertGreater(len(opts), 3, help_text)
            man = self.man_text(name + ".1")
            for o in opts:
                self.assertIn(o, man, (name, o))

    def test_cache_man_page_lists_every_command(self):
        help_text = sh([self.files["meshfs-cache"], "--help"]).stdout
        commands = re.findall(r"^  ([a-z]+)\b", help_text.split("Options:")[0], re.M)
        self.assertGreaterEqual(len(commands), 4, help_text)
        man = self.man_text("meshfs-cache.1")
        readme = slurp(os.path.join(SOURCE, "README.md"))
        for c in commands:
            self.assertRegex(man, r"\n\s+" + c + r"\b", c)
            self.assertIn(c, readme.split("meshfs-cache", 1)[1], c)

    def libdir(self):
        # the private libfuse an installed meshfs finds through its rpath
        for v in self.installed:
            if v.endswith("/meshfs/libfuse3.so.4"):
                return os.path.dirname(v)
        return ""

    def test_version(self):
        p = sh([self.files["meshfs"], "--version"], env=dict(os.environ, LD_LIBRARY_PATH=self.libdir()))
        self.assertEqual(p.returncode, 0, p.stderr)
        info = json.loads(sh(["meson", "introspect", BUILD, "--projectinfo"]).stdout)
        self.assertIn("meshfs " + info["version"] + "\n", p.stdout)
        self.assertRegex(p.stdout, r"FUSE library version 3\.\d+")
        self.assertRegex(p.stdout, r"FUSE kernel interface version 7\.\d+")
        self.assertRegex(p.stdout, r"assimp version \d+\.\d+\.\d+")
        self.assertIn("cache format version 2\n", p.stdout)

    def test_every_tool_prints_versions(self):
        """Issue 32 item 4: -V and --version on all four tools, each naming
        meshfs, the cache format and output versions and the libraries its
        bytes depend on, as it links them."""
        info = json.loads(sh(["meson", "introspect", BUILD, "--projectinfo"]).stdout)
        env = dict(os.environ, LD_LIBRARY_PATH=self.libdir())
        worker_libs = [r"assimp version \d+\.\d+", r"meshoptimizer version \d+\.\d+",
                       r"cgltf version (\d+\.\d+|not built)", r"fast_obj version (\d+\.\d+|not built)"]
        for name in ("meshfs", "meshfs-convert", "meshfs-inspect", "meshfs-cache"):
            outs = []
            for flag in ("-V", "--version"):
                p = sh([self.files[name], flag], env=env)
                self.assertEqual((p.returncode, p.stderr), (0, ""), (name, flag))
                outs.append(p.stdout)
            self.assertEqual(outs[0], outs[1], name)
            out = outs[0]
            self.assertTrue(out.startswith(f"{name} {info['version']}\n"), out)
            self.assertIn("\ncache format version 2\n", out)
            self.assertRegex(out, r"\noutput version " + re.escape(info["version"]) + r"\+assimp-")
            self.assertRegex(out, r"\nzlib version 1\.\d+")
            self.assertRegex(out, r"\nxxhash version 0\.\d+\.\d+\n")
            self.assertRegex(out, r"\nlibdeflate version 1\.\d+\n")
            converts = name in ("meshfs", "meshfs-convert")
            for lib in worker_libs:
                (self.assertRegex if converts else self.assertNotRegex)(out, lib)
            (self.assertRegex if name == "meshfs" else self.assertNotRegex)(out, r"FUSE library version 3\.")
            # the man page says -V too
            self.assertRegex(self.man_text(name + ".1"), r"-V, --version", name)

    FSTAB_SCRIPT = r"""
mount --bind "$PREFIX" /usr/local
mount -T "$FSTAB" "$MNT"
grep -cF " $MNT " /proc/self/mountinfo > "$OUT/after-mount"
cmp "$MNT/crate.obj" "$SRC/crate.obj" && echo same > "$OUT/cmp"
umount "$MNT"
grep -cF " $MNT " /proc/self/mountinfo > "$OUT/after-umount" || true
mount -T "$FSTAB" -a
mount -T "$FSTAB" -a
grep -F " $MNT " /proc/self/mountinfo > "$OUT/mountinfo" || true
for p in $(pgrep -x meshfs); do
  grep -qF "$MNT" /proc/$p/cmdline && readlink /proc/$p/exe >> "$OUT/exe"
done
n=0
while grep -qF " $MNT " /proc/self/mountinfo && [ $n -lt 5 ]; do umount "$MNT"; n=$((n+1)); done
echo $n > "$OUT/umounts"
"""

    def test_fstab_round_trip_with_installed_meshfs(self):
        if os.geteuid() != 0 or not shutil.which("mount.fuse3") or not shutil.which("unshare"):
            self.skipTest("needs root, mount.fuse3 and unshare")
        if not self.prefix.endswith("/usr/local"):
            self.skipTest("build's prefix is not /usr/local")
        tmp = self._tmp.name
        src, mnt, out = (os.path.join(tmp, n) for n in ("src", "mnt", "out"))
        shutil.copytree(os.path.join(EXAMPLES, "crate"), src)
        os.makedirs(mnt)
        os.makedirs(out)
        fstab = os.path.join(tmp, "fstab")
        cache = os.path.join(tmp, "cache")
        with open(fstab, "w") as f:  # README's line, with this test's folders
            f.write(f"{src} {mnt} fuse.meshfs ro,allow_other,cache_dir={cache},formats=fmd:gmf 0 0\n")
        env = dict(os.environ, PREFIX=self.prefix, FSTAB=fstab, MNT=mnt, SRC=src, OUT=out)
        p = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-ec", self.FSTAB_SCRIPT],
                           env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        rd = lambda n: slurp(os.path.join(out, n))
        self.assertEqual(rd("after-mount"), "1\n")
        self.assertEqual(rd("cmp"), "same\n")
        self.assertEqual(rd("after-umount"), "0\n")
        rows = rd("mountinfo").splitlines()
        self.assertEqual(len(rows), 1, rows)  # mount -a twice: one mount
        self.assertEqual(rows[0].split(" - ")[1].split()[:2], ["fuse.meshfs", src])
        self.assertIn("allow_other", rows[0])
        # the daemon is the installed binary (bound over /usr/local here)
        self.assertEqual(rd("exe"), "/usr/local/bin/meshfs\n")
        self.assertEqual(rd("umounts"), "1\n")


class SystemdExample(unittest.TestCase):
    UNIT = os.path.join(SOURCE, "docs", "systemd", "mnt-assets.mount")

    def test_unit_is_valid_and_matches_readme(self):
        keys = dict(l.split("=", 1) for l in slurp(self.UNIT).splitlines()
                    if "=" in l and not l.startswith("#"))
        self.assertEqual(keys["Type"], "fuse.meshfs")
        self.assertEqual(keys["Where"], "/mnt/assets")
        readme = slurp(os.path.join(SOURCE, "README.md"))
        self.assertIn(f"{keys['What']}  {keys['Where']}  fuse.meshfs  {keys['Options']}  0 0", readme)
        if not shutil.which("systemd-analyze"):
            self.skipTest("no systemd-analyze")
        p = sh(["systemd-analyze", "verify", self.UNIT])
        self.assertEqual(p.returncode, 0, p.stderr)


class Demo(unittest.TestCase):
    """Issue 32 item 9: scripts/demo converts and mounts with one private
    cache (the mount converts nothing again) and leaves nothing behind."""

    def test_demo_shares_one_private_cache_and_cleans_up(self):
        with tempfile.TemporaryDirectory(prefix="meshfs-demo-test-") as tmp:
            tmpdir, home = os.path.join(tmp, "tmp"), os.path.join(tmp, "home")
            os.makedirs(tmpdir)
            os.makedirs(home)
            env = dict(os.environ, TMPDIR=tmpdir, HOME=home, XDG_CACHE_HOME=os.path.join(home, ".cache"))
            # The demo builds and runs the plain build/, as a user would. Under
            # the sanitized suite meson points LD_LIBRARY_PATH at build-asan's
            # libfuse, which a plain binary cannot load first (ASan aborts).
            env.pop("LD_LIBRARY_PATH", None)
            p = sh([os.path.join(SOURCE, "scripts", "demo")], env=env)
            self.assertEqual(p.returncode, 0, p.stdout[-2000:] + p.stderr[-2000:])
            self.assertIn("meshfs-convert: 5 converted, 0 up to date, 0 failed", p.stdout + p.stderr)
            counters = p.stdout.split("== the daemon's counters", 1)[1]
            self.assertRegex(counters, r"\nconversions=0\n")  # the mount found them in the cache
            self.assertRegex(counters, r"\ncache_hits=[1-9]")
            self.assertEqual(os.listdir(tmpdir), [])  # its folder, cache included, is gone
            self.assertEqual(os.listdir(home), [])    # no ~/.cache/meshfs


class MountBehaviour(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="meshfs-inst-")
        self.tmp = self._tmp.name
        self.src = os.path.join(self.tmp, "src")
        shutil.copytree(os.path.join(EXAMPLES, "crate"), self.src)
        self.mnt = os.path.join(self.tmp, "mnt")
        self.cache = os.path.join(self.tmp, "cache")

    def tearDown(self):
        if mounts_at(self.mnt):
            subprocess.run(["umount", "-l", self.mnt], capture_output=True)
        self._tmp.cleanup()

    def kill_daemon(self, *opts):
        with Mount(self.src, self.mnt, self.cache, *opts) as m:
            self.assertEqual(len(mounts_at(self.mnt)), 1)
            os.kill(m.proc.pid, signal.SIGKILL)
            m.proc.wait()
            for _ in range(50):
                if not mounts_at(self.mnt):
                    break
                time.sleep(0.1)
            return len(mounts_at(self.mnt))

    def test_kill_9_leaves_no_dead_mount(self):
        self.assertEqual(self.kill_daemon(), 0)
        os.makedirs(os.path.join(self.mnt, "again"))  # the folder is usable: no ENOTCONN

    def test_no_auto_unmount_leaves_it(self):
        # the witness: without the guard the dead mount stays
        self.assertEqual(self.kill_daemon("no_auto_unmount"), 1)
        with self.assertRaises(OSError) as cm:
            os.stat(self.mnt)
        self.assertEqual(cm.exception.errno, 107)  # ENOTCONN

    def test_clean_unmount_leaves_no_guard(self):
        with Mount(self.src, self.mnt, self.cache) as m:
            pid = m.proc.pid
            # the daemon forks its guard just after the mount appears
            for _ in range(100):
                guards = [p for p in os.listdir("/proc") if p.isdigit()
                          and self.comm(p) == "meshfs-umount" and self.ppid(p) == pid]
                if guards:
                    break
                time.sleep(0.05)
            self.assertEqual(len(guards), 1)
        time.sleep(0.3)
        self.assertFalse(os.path.exists(f"/proc/{guards[0]}/comm") and self.comm(guards[0]) == "meshfs-umount"
                         and self.state(guards[0]) != "Z")

    @staticmethod
    def comm(p):
        try:
            return slurp(f"/proc/{p}/comm").strip()
        except OSError:
            return ""

    @staticmethod
    def ppid(p):
        try:
            return int(slurp(f"/proc/{p}/stat").rsplit(")", 1)[1].split()[1])
        except OSError:
            return -1

    @staticmethod
    def state(p):
        try:
            return slurp(f"/proc/{p}/stat").rsplit(")", 1)[1].split()[0]
        except OSError:
            return "gone"

    def test_nonempty_mount_point_warns(self):
        os.makedirs(self.mnt)
        with open(os.path.join(self.mnt, "hidden.txt"), "w") as f:
            f.write("x")
        with Mount(self.src, self.mnt, self.cache) as m:
            self.assertIn(f"mount point {self.mnt} is not empty", m.output())
        empty = os.path.join(self.tmp, "empty")
        with Mount(self.src, empty, self.cache) as m:
            self.assertNotIn("not empty", m.output())

    def test_unknown_option_exits_2_naming_it(self):
        os.makedirs(self.mnt)
        p = sh([tool("meshfs"), "-f", "-o", "cache_dir=" + self.cache + ",no_such_opt", self.src, self.mnt],
               env=no_leak_check_env())
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("no_such_opt", p.stderr)
        self.assertEqual(mounts_at(self.mnt), [])
        for t in ("meshfs-convert", "meshfs-inspect"):
            p = sh([tool(t), "--no-such-opt", self.src])
            self.assertEqual(p.returncode, 2, (t, p.stderr))
            self.assertIn("no-such-opt", p.stderr)

    def wait_mounts(self, n):
        # Mount returns at once when MNT is a mount already
        for _ in range(200):
            if len(mounts_at(self.mnt)) == n:
                break
            time.sleep(0.05)
        self.assertEqual(len(mounts_at(self.mnt)), n)

    def test_second_mount_of_the_same_src_is_refused(self):
        """Issue 32 item 5: `meshfs SRC MNT` again on a live mount of SRC
        exits 2 saying so, and stacks nothing; -o stack does stack, warning
        that the first mount is hidden (not "its files")."""
        with Mount(self.src, self.mnt, self.cache):
            p = sh([tool("meshfs"), "-f", "-o", "cache_dir=" + self.cache, self.src, self.mnt])
            self.assertEqual(p.returncode, 2, p.stderr)
            real = os.path.realpath(self.src)
            self.assertEqual(p.stderr, f"meshfs: {real} is already mounted at {self.mnt} by meshfs; "
                                       f"unmount it first (fusermount3 -u {self.mnt}), or give -o stack "
                                       f"to mount over it\n")
            self.assertEqual(len(mounts_at(self.mnt)), 1)
            with Mount(self.src, self.mnt, self.cache, "stack") as second:
                self.wait_mounts(2)
                self.assertIn(f"mount point {self.mnt} is a meshfs mount of {real}; it is hidden while "
                              "this one is mounted over it", second.output())
                self.assertNotIn("not empty", second.output())
            self.assertEqual(len(mounts_at(self.mnt)), 1)

    def test_another_src_over_a_meshfs_mount_is_not_refused(self):
        other = os.path.join(self.tmp, "other")
        os.makedirs(other)
        with Mount(self.src, self.mnt, self.cache):
            with Mount(other, self.mnt, self.cache) as second:
                self.wait_mounts(2)
                self.assertIn(f"is a meshfs mount of {os.path.realpath(self.src)}", second.output())

    def refused(self, opts):
        os.makedirs(self.mnt, exist_ok=True)
        p = sh([tool("meshfs"), "-f", "-o", "cache_dir=" + self.cache + "," + opts, self.src, self.mnt],
               env=no_leak_check_env())
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(mounts_at(self.mnt), [])
        self.assertNotIn("fuse: unknown option", p.stderr)  # meshfs's words, not libfuse's
        return p.stderr

    def test_unknown_option_names_the_closest(self):
        """Issue 32 item 6: a typo of a meshfs or a FUSE option names the
        closest one; a word far from every option does not guess."""
        self.assertEqual(self.refused("fromats=gmf"),
                         "meshfs: unknown option -o fromats=gmf (did you mean formats=?)\n")
        self.assertEqual(self.refused("hide_source,alow_other"),
                         "meshfs: unknown option -o hide_source (did you mean hide_sources?)\n"
                         "meshfs: unknown option -o alow_other (did you mean allow_other?)\n")
        self.assertEqual(self.refused("max_thread=4"),
                         "meshfs: unknown option -o max_thread=4 (did you mean max_threads=?)\n")
        self.assertEqual(self.refused("ro,no_such_opt"),
                         "meshfs: unknown option -o no_such_opt (meshfs --help lists the options)\n")

    def test_comma_inside_formats_gets_the_separator_hint(self):
        self.assertEqual(self.refused("formats=gmf,dem"),
                         "meshfs: unknown option -o dem: inside -o formats=, ':' or '+' separates the "
                         "formats (a comma ends the option): -o formats=gmf:dem\n")

    def test_generic_fuse_options_still_work(self):
        with Mount(self.src, self.mnt, self.cache, "allow_other", "default_permissions", "max_threads=4",
                   "ro", "auto_unmount", "entry_timeout=2") as m:
            self.assertTrue(m.alive())
            self.assertIn("crate.obj", os.listdir(self.mnt))
            self.assertIn("allow_other", mounts_at(self.mnt)[0])


if __name__ == "__main__":
    unittest.main()
