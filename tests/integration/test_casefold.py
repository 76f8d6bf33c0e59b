"""-o lowercase_names / --lowercase-names across owners (docs/naming.md,
"lowercase_names"; docs/security.md, "case folding").

Entries whose lowercase names are equal are shown once, for the first in
byte order, if one user owns them all.  If their owners differ, none of
them is shown: user B's `Ship.obj` must not stand in for user A's
`ship.obj` in a shared folder (issue 33, finding 5).  Each case is read as
both users, through a root mount with allow_other, and the same folder is
given to meshfs-convert --lowercase-names.

Run as root: test users are made with useradd and removed at the end."""
import errno
import json
import os
import subprocess
import sys
import time
import unittest

from common import FORMATS, convert, tool
from mount import Mount
import test_security
from test_security import IS_ROOT, as_user, make_user, open_tmp


def tearDownModule():
    test_security.tearDownModule()  # the users make_user made


A_SHIP = "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"
B_SHIP = "v 0 0 0\nv 7 0 0\nv 0 7 0\nf 1 2 3\n"
CRATE = "v 0 0 0\nv 2 0 0\nv 0 2 0\nf 1 2 3\n"

# A user's look at paths: per op, ["ok", value] or ["err", errno].
PROBE = r"""
import json, os, sys
out = []
for op in sys.argv[1:]:
    kind, path = op.split(":", 1)
    try:
        if kind == "stat":
            os.stat(path)
            v = None
        elif kind == "read":
            with open(path, "rb") as f:
                v = f.read().decode("latin-1")
        elif kind == "list":
            v = sorted(os.listdir(path))
        else:
            v = os.getxattr(path, kind).decode()
        out.append(["ok", v])
    except OSError as e:
        out.append(["err", e.errno])
print(json.dumps(out))
"""


def probe(user, *ops):
    """ops ("stat:PATH", "read:PATH", "list:PATH", "user.x:PATH") as user."""
    args = [sys.executable, "-c", PROBE] + list(ops)
    if user:
        args = as_user(user[1], user[2], args)
    p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if p.returncode:
        raise AssertionError(p.stderr)
    return json.loads(p.stdout)


def write(path, text, owner):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o644)
    os.chown(path, owner[1], owner[2])


def mkdir(path, owner, mode=0o755):
    os.mkdir(path)
    os.chmod(path, mode)
    os.chown(path, owner[1], owner[2])


@unittest.skipUnless(IS_ROOT, "needs root: test users, chown, an allow_other mount")
class CaseFoldOwnersTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.A = make_user("ca")
        cls.B = make_user("cb")

    def setUp(self):
        self._tmp = open_tmp()
        self.tmp = self._tmp.name
        self.src = os.path.join(self.tmp, "src")
        os.mkdir(self.src)
        os.chmod(self.src, 0o755)
        self.drop = os.path.join(self.src, "drop")
        os.mkdir(self.drop)
        os.chmod(self.drop, 0o1777)  # a shared folder, as /tmp
        self.mnt = os.path.join(self.tmp, "mnt")
        self.cache = os.path.join(self.tmp, "cache")
        write(os.path.join(self.drop, "crate.obj"), CRATE, self.A)

    def tearDown(self):
        self._tmp.cleanup()

    def mount(self):
        return Mount(self.src, self.mnt, self.cache, "allow_other", "lowercase_names")

    def m(self, *p):
        return os.path.join(self.mnt, "drop", *p)

    def folder_error(self, user):
        return probe(user, "user.meshfs.error:" + self.m())[0]

    def assert_hidden(self, names, user):
        """Every name (and every view of a model name) answers ENOENT to
        user, and the folder's listing shows none of them."""
        paths = []
        for n in names:
            paths.append(self.m(n))
            if n.endswith(".obj"):
                stem = n[:-4]
                paths += [self.m(f"{stem}.{f}") for f in FORMATS]
                paths += [self.m(f"{n}.{f}") for f in FORMATS]
        got = probe(user, *(f"stat:{p}" for p in paths), f"list:{self.m()}")
        for p, r in zip(paths, got):
            self.assertEqual(r, ["err", errno.ENOENT], f"{user[0] if user else 'root'}: {p}")
        listing = got[-1][1]
        for n in names:
            stem = n[:-4] if n.endswith(".obj") else n
            self.assertFalse([x for x in listing if x == n or x.startswith(stem + ".")], listing)
        # the neighbour is untouched
        self.assertIn("crate.obj", listing)
        self.assertIn("crate.gmf", listing)

    def test_owners_collide_neither_is_shown(self):
        write(os.path.join(self.drop, "ship.obj"), A_SHIP, self.A)
        write(os.path.join(self.drop, "Ship.obj"), B_SHIP, self.B)
        want = (f"'Ship.obj' (uid {self.B[1]}) and 'ship.obj' (uid {self.A[1]}) are not shown: "
                "each is 'ship.obj' in lowercase and their owners differ")
        with self.mount() as mt:
            for user in (self.A, self.B, None):
                with self.subTest(user=user[0] if user else "root"):
                    self.assert_hidden(["ship.obj"], user)
                    self.assertEqual(self.folder_error(user), ["ok", want + "\n"])
            # the capital name reaches nothing either
            self.assertEqual(probe(self.B, "stat:" + self.m("Ship.obj"))[0], ["err", errno.ENOENT])
            # the neighbour's views still convert
            self.assertEqual(probe(self.A, "stat:" + self.m("crate.gmf"))[0], ["ok", None])
            log = mt.output()
        self.assertEqual(log.count("drop: " + want), 1, log)

    def test_a_hard_link_counts_as_owner_unknown(self):
        """B links a file A owns (protected_hardlinks lets B link what B can
        read and write), puts B's bytes in it and names the link
        'Ship.obj' beside A's 'ship.obj': both are A's by uid, but the
        linked one's bytes may be anyone's, so neither is shown, by the
        mount or meshfs-convert (review 1, finding 3)."""
        write(os.path.join(self.drop, "ship.obj"), A_SHIP, self.A)
        other = os.path.join(self.src, "other")
        mkdir(other, self.A)
        write(os.path.join(other, "a.obj"), B_SHIP, self.A)
        os.link(os.path.join(other, "a.obj"), os.path.join(self.drop, "Ship.obj"))
        want = (f"'Ship.obj' (owner unknown) and 'ship.obj' (uid {self.A[1]}) are not shown: "
                "each is 'ship.obj' in lowercase and their owners differ")
        with self.mount():
            for user in (self.A, self.B):
                with self.subTest(user=user[0]):
                    self.assert_hidden(["ship.obj"], user)
                    self.assertEqual(self.folder_error(user), ["ok", want + "\n"])
        out = os.path.join(self.tmp, "out")
        p, rows = convert([self.drop], out, "--lowercase-names", "-f", "fmd")
        made = [n for _, _, fs in os.walk(out) for n in fs if n.lower().startswith("ship")]
        self.assertEqual(made, [])
        self.assertTrue([n for _, _, fs in os.walk(out) for n in fs if n == "crate.fmd"])

    def test_one_owner_keeps_byte_order(self):
        """Both A's: 'Ship.obj' (S < s) is shown as 'ship.obj', and the folder
        says why the other is not."""
        write(os.path.join(self.drop, "ship.obj"), A_SHIP, self.A)
        write(os.path.join(self.drop, "Ship.obj"), B_SHIP, self.A)
        want = "'ship.obj' is not shown: 'Ship.obj' is shown as 'ship.obj' (byte order wins)"
        with self.mount() as mt:
            for user in (self.A, self.B):
                got = probe(user, "read:" + self.m("ship.obj"), "stat:" + self.m("ship.gmf"),
                            "list:" + self.m())
                self.assertEqual(got[0], ["ok", B_SHIP])
                self.assertEqual(got[1], ["ok", None])
                self.assertEqual(got[2][1].count("ship.obj"), 1)
                self.assertEqual(self.folder_error(user), ["ok", want + "\n"])
            log = mt.output()
        self.assertIn("drop: " + want, log)

    def test_folders_of_two_owners(self):
        mkdir(os.path.join(self.drop, "props"), self.A)
        write(os.path.join(self.drop, "props", "cone.obj"), A_SHIP, self.A)
        mkdir(os.path.join(self.drop, "Props"), self.B)
        write(os.path.join(self.drop, "Props", "cone.obj"), B_SHIP, self.B)
        with self.mount():
            for user in (self.A, self.B):
                got = probe(user, "stat:" + self.m("props"), "read:" + self.m("props", "cone.obj"),
                            "stat:" + self.m("props", "cone.gmf"), "list:" + self.m("props"),
                            "list:" + self.m())
                self.assertEqual(got[:4], [["err", errno.ENOENT]] * 4)
                self.assertNotIn("props", got[4][1])
                err = self.folder_error(user)
                self.assertIn(f"'Props' (uid {self.B[1]}) and 'props' (uid {self.A[1]}) are not shown",
                              err[1])

    def test_file_named_like_another_owners_view(self):
        """B's `Ship.GMF` is 'ship.gmf' only by folding, the view name of A's
        ship.obj: neither is shown as 'ship.gmf'; A's views move to the long
        form, as away from any real file."""
        write(os.path.join(self.drop, "ship.obj"), A_SHIP, self.A)
        write(os.path.join(self.drop, "Ship.GMF"), "B's bytes", self.B)
        want = (f"'Ship.GMF' (uid {self.B[1]}) is not shown: it is 'ship.gmf' in lowercase, a view name "
                f"of 'ship.obj' (uid {self.A[1]}), and their owners differ")
        with self.mount() as mt:
            for user in (self.A, self.B):
                got = probe(user, "stat:" + self.m("ship.gmf"), "stat:" + self.m("ship.obj.gmf"),
                            "read:" + self.m("ship.obj"), "list:" + self.m())
                self.assertEqual(got[:3], [["err", errno.ENOENT], ["ok", None], ["ok", A_SHIP]])
                self.assertNotIn("ship.gmf", got[3][1])
                self.assertIn("ship.obj.fmd", got[3][1])
                self.assertEqual(self.folder_error(user), ["ok", want + "\n"])
            log = mt.output()
        self.assertIn("drop: " + want, log)

    def test_package_name_of_two_owners(self):
        """Real files named like the folder's package, of two owners: neither
        is shown, and no package is made in their place (a listed name must
        answer a lookup)."""
        write(os.path.join(self.drop, "game_resources.lgepkg"), "A's", self.A)
        write(os.path.join(self.drop, "Game_Resources.lgepkg"), "B's", self.B)
        with self.mount():
            for user in (self.A, self.B):
                got = probe(user, "stat:" + self.m("game_resources.lgepkg"), "list:" + self.m())
                self.assertEqual(got[0], ["err", errno.ENOENT])
                self.assertNotIn("game_resources.lgepkg", got[1][1])
                self.assertIn("crate.gmf", got[1][1])

    def test_collision_comes_and_goes_while_mounted(self):
        """The folder's table is rebuilt when its mtime moves: B's file
        hides A's at once (after the kernel's attribute time), and A's is
        back when B's goes, without a remount."""
        write(os.path.join(self.drop, "ship.obj"), A_SHIP, self.A)
        with self.mount():
            got = probe(self.B, "read:" + self.m("ship.obj"), "stat:" + self.m("ship.gmf"),
                        "user.meshfs.error:" + self.m(), "user.meshfs.error:" + self.mnt)
            self.assertEqual(got, [["ok", A_SHIP], ["ok", None], ["err", errno.ENODATA],
                                   ["err", errno.ENODATA]])
            b_ship = os.path.join(self.drop, "Ship.obj")
            write(b_ship, B_SHIP, self.B)
            time.sleep(1.5)  # entry and attribute times: 1 s
            self.assert_hidden(["ship.obj"], self.A)
            self.assertIn("'Ship.obj'", self.folder_error(self.A)[1])
            subprocess.run(as_user(self.B[1], self.B[2], ["rm", b_ship]), check=True)
            time.sleep(1.5)
            for user in (self.A, self.B):
                got = probe(user, "read:" + self.m("ship.obj"), "stat:" + self.m("ship.gmf"),
                            "user.meshfs.error:" + self.m())
                self.assertEqual(got, [["ok", A_SHIP], ["ok", None], ["err", errno.ENODATA]])

    def test_meshfs_convert_same_rule(self):
        """--lowercase-names writes neither model's views, refuses both rows
        with the note, and warns once; one owner keeps the byte-order rule."""
        write(os.path.join(self.drop, "ship.obj"), A_SHIP, self.A)
        write(os.path.join(self.drop, "Ship.obj"), B_SHIP, self.B)
        want = (f"'Ship.obj' (uid {self.B[1]}) and 'ship.obj' (uid {self.A[1]}) are not shown: "
                "each is 'ship.obj' in lowercase and their owners differ")
        out = os.path.join(self.tmp, "out")
        p, rows = convert([self.src], out, "--lowercase-names", "-f", "gmf,fmd")
        self.assertEqual(p.returncode, 1, p.stderr)
        warnings = [l for l in p.stderr.splitlines() if l.startswith("meshfs-convert: warning:")]
        self.assertEqual(warnings, [f"meshfs-convert: warning: {self.drop}: {want}"], p.stderr)
        by_model = {os.path.basename(r["model"]): r for r in rows if "model" in r}
        for name in ("ship.obj", "Ship.obj"):
            self.assertFalse(by_model[name]["ok"])
            self.assertEqual(by_model[name]["error"], "not converted: " + want)
        self.assertTrue(by_model["crate.obj"]["ok"])
        made = sorted(f for f in os.listdir(os.path.join(out, "drop")) if not f.startswith("."))
        self.assertEqual([f for f in made if f.startswith("ship")], [])
        self.assertIn("crate.gmf", made)
        # one owner: as before
        os.chown(os.path.join(self.drop, "Ship.obj"), self.A[1], self.A[2])
        out2 = os.path.join(self.tmp, "out2")
        p, rows = convert([self.src], out2, "--lowercase-names", "-f", "gmf")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("'ship.obj' is not shown: 'Ship.obj' is shown as 'ship.obj'", p.stderr)
        self.assertTrue(os.path.exists(os.path.join(out2, "drop", "ship.gmf")))


if __name__ == "__main__":
    unittest.main()
