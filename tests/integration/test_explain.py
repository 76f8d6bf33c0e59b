"""meshfs-cache explain (issue 28 item 4, docs/cache.md "Explain"): what a
view's key is made of, each input with its path, size and hash or absent,
the options and the version, what the cache holds under each view's key,
and why a lookup would convert, naming the input that changed; as text and
--json, for a model in SRC and for a view or model through a mount."""
import json
import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import SOURCE, TreeCase, run_tests, tool  # noqa: E402
from mount import Mount  # noqa: E402

CRATE = os.path.join(SOURCE, "examples", "assets", "crate")
SETTINGS = [".meshfs", "crate/.meshfs", "crate/crate.obj.meshfs"]


class Explain(TreeCase):
    def setUp(self):
        super().setUp()
        os.makedirs(os.path.join(self.src, "crate"))
        shutil.copy(os.path.join(CRATE, "crate.obj"), os.path.join(self.src, "crate"))
        self.model = os.path.join(self.src, "crate", "crate.obj")

    def explain(self, *args, cache=None):
        return subprocess.run([tool("meshfs-cache"), "--cache-dir", cache or self.cache] + list(args),
                              capture_output=True, text=True, timeout=300)

    def json_of(self, *args, cache=None):
        p = self.explain("--json", "explain", *args, cache=cache)
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def test_a_model_in_src_before_and_after_and_what_changed(self):
        e = self.json_of("--src", self.src, self.model)
        self.assertEqual((e["model"], e["size"], e["entry"], e["inputs"]), ("crate/crate.obj", 476, False, []))
        self.assertTrue(e["miss"].startswith("no model entry for the model's bytes now (476 bytes, XXH3-128 %s)"
                                             % e["hash"]), e["miss"])
        self.assertEqual([v["state"] for v in e["views"]], ["unknown"] * 8)
        p = subprocess.run([tool("meshfs-convert"), "-q", "--cache-dir", self.cache, "-o",
                            os.path.join(self.tmp, "out"), self.src], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        e = self.json_of("--src", self.src, self.model)
        self.assertIsNone(e["miss"])
        self.assertTrue(e["entry"])
        self.assertEqual([(i["path"], i["kind"], i["now"]) for i in e["inputs"]],
                         [("crate/crate.obj", "file", "same"), ("crate/crate.mtl", "missing", "same")] +
                         [(s, "absent", "same") for s in SETTINGS])
        self.assertEqual(e["inputs"][0]["hash"], e["hash"])
        self.assertEqual([v["format"] for v in e["views"]], ["fmd", "fmi", "gmf", "dem", "vrt", "tri", "sph", "tex"])
        for v in e["views"]:
            self.assertEqual(v["state"], "embedded", v)
            self.assertRegex(v["key"], "^[0-9a-f]{32}$")
        # the .gmf beside it has exactly the size the cache says
        gmf = next(v for v in e["views"] if v["format"] == "gmf")
        self.assertEqual(gmf["size"], os.path.getsize(os.path.join(self.tmp, "out", "crate", "crate.gmf")))
        # the .mtl arrives: the lookup would convert, and says why
        shutil.copy(os.path.join(CRATE, "crate.mtl"), os.path.join(self.src, "crate"))
        e = self.json_of("--src", self.src, self.model)
        self.assertEqual(e["miss"], "input 'crate/crate.mtl' (missing) changed since the last conversion: there now")
        self.assertEqual(e["inputs"][1]["now"], "there now")
        # the text says the same
        p = self.explain("explain", "--src", self.src, self.model)
        self.assertEqual(p.returncode, 0)
        self.assertIn("  missing    crate/crate.mtl  [there now]\n", p.stdout)
        self.assertTrue(p.stdout.endswith("a lookup now: input 'crate/crate.mtl' (missing) changed since the "
                                          "last conversion: there now\n"), p.stdout)
        # other options, other keys
        o = self.json_of("--src", self.src, "--fmd-raw", self.model)
        self.assertNotEqual(next(v for v in o["views"] if v["format"] == "fmd")["options"],
                            next(v for v in e["views"] if v["format"] == "fmd")["options"])

    def test_through_a_mount_a_view_and_its_model(self):
        with Mount(self.src, self.mnt, self.cache) as m:
            with open(os.path.join(self.mnt, "crate", "crate.gmf"), "rb") as f:
                f.read()
            by_view = self.json_of(os.path.join(self.mnt, "crate", "crate.gmf"))
            by_model = self.json_of(os.path.join(self.mnt, "crate", "crate.obj"))
            p = self.explain("explain", os.path.join(self.mnt, "crate", "crate.tex"))
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("a lookup now: served from the cache, no conversion\n", p.stdout)
            self.assertTrue(m.alive())
        self.assertEqual(by_view, by_model)
        self.assertIsNone(by_view["miss"])
        # the mount keys as meshfs-cache does with the same options
        by_src = self.json_of("--src", self.src, self.model)
        self.assertEqual(by_src["entry_key"], by_view["entry_key"])
        self.assertEqual([v["key"] for v in by_src["views"]], [v["key"] for v in by_view["views"]])

    def test_settings_that_applied_and_from_which_file(self):
        """Issue 30 item 4: the settings files' keys that apply, each with
        the file and line it came from, in SRC and through a mount alike;
        a malformed file is said with its file, line and key."""
        e = self.json_of("--src", self.src, self.model)
        self.assertEqual((e["settings"], e["settings_error"]), ("", None))
        p = self.explain("explain", "--src", self.src, self.model)
        self.assertIn("\nsettings: none (mount and command-line options)\nviews:\n", p.stdout)
        with open(os.path.join(self.src, "crate", ".meshfs"), "w") as f:
            f.write("scale = 0.01\nup = y\n")
        with open(os.path.join(self.src, "crate", "crate.obj.meshfs"), "w") as f:
            f.write("# the sidecar wins\nup = z\n")
        want = "scale = 0.01  (crate/.meshfs:1)\nup = z  (crate/crate.obj.meshfs:2)\n"
        e = self.json_of("--src", self.src, self.model)
        self.assertEqual((e["settings"], e["settings_error"]), (want, None))
        p = self.explain("explain", "--src", self.src, self.model)
        self.assertIn("\nsettings (from the files beside the model):\n  scale = 0.01  (crate/.meshfs:1)\n"
                      "  up = z  (crate/crate.obj.meshfs:2)\nviews:\n", p.stdout)
        with Mount(self.src, self.mnt, self.cache) as m:
            by_view = self.json_of(os.path.join(self.mnt, "crate", "crate.gmf"))
            self.assertEqual(by_view["settings"], want)
            with open(os.path.join(self.src, ".meshfs"), "w") as f:
                f.write("scale = 1\nbogus = 2\n")
            by_view = self.json_of(os.path.join(self.mnt, "crate", "crate.gmf"))
            self.assertTrue(m.alive())
        err = ".meshfs: line 2: key 'bogus': unknown key (docs/settings.md lists them)"
        self.assertEqual((by_view["settings"], by_view["settings_error"]), (None, err))
        p = self.explain("explain", "--src", self.src, self.model)
        self.assertIn("\nsettings: " + err + "\nviews:\n", p.stdout)

    def test_errors(self):
        p = self.explain("explain", os.path.join(self.src, "crate", "crate.obj"))
        self.assertEqual(p.returncode, 1)
        self.assertIn("not a view or model in a meshfs mount; for a model in a source folder give --src SRC",
                      p.stderr)
        with open(os.path.join(self.src, "notes.txt"), "w") as f:
            f.write("x")
        p = self.explain("explain", "--src", self.src, os.path.join(self.src, "notes.txt"))
        self.assertEqual(p.returncode, 1)
        self.assertIn("notes.txt: not a model file in", p.stderr)
        p = self.explain("explain")
        self.assertEqual(p.returncode, 2)
        self.assertIn("missing PATH", p.stderr)
        p = self.explain("explain", "--bogus", "x")
        self.assertEqual((p.returncode, p.stderr.splitlines()[0]),
                         (2, "meshfs-cache: explain: unknown option '--bogus'"))


if __name__ == "__main__":
    run_tests()
