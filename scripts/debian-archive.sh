# Sourced by scripts/fetch-debian-source and scripts/fetch-debian-package:
# apt's own client with private state, so the system's apt configuration,
# lists and cache are never touched (docs/dependencies.md).
#
# debian_archive: sets uri and keyring ("-": none named) to the archive the
# system's deb822 sources use for this release's own suite (not -updates or
# -security) and component main; calls fail (the caller's) when none does.
#
# debian_apt_private TMP TYPE SUITE: writes TMP/sources.sources (TYPE deb or
# deb-src, SUITE main of that archive), makes TMP/lists, TMP/cache and
# TMP/dl (owned by apt's unprivileged user when run as root, since apt
# downloads as it), and sets the array apt_opts that points apt at them.

debian_archive() {
  local codename
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  [ -n "$codename" ] || fail "no VERSION_CODENAME in /etc/os-release"
  shopt -s nullglob
  uri= keyring=
  read -r uri keyring < <(awk -v want="$codename" '
    function flush() {
      if (!done && types ~ /(^| )deb( |$)/ && (" " suites " ") ~ (" " want " ") &&
          (" " comps " ") ~ / main / && uri != "") {
        print uri, (keyring == "" ? "-" : keyring); done = 1
      }
      types = suites = comps = uri = keyring = ""
    }
    FNR == 1 { flush() }
    /^[ \t]*$/ { flush(); next }
    /^#/ { next }
    tolower($1) == "types:" { $1 = ""; types = $0 }
    tolower($1) == "suites:" { $1 = ""; suites = $0 }
    tolower($1) == "components:" { $1 = ""; comps = $0 }
    tolower($1) == "uris:" { uri = $2 }
    tolower($1) == "signed-by:" && $2 ~ /^\// { keyring = $2 }
    END { flush() }' /etc/apt/sources.list.d/*.sources /dev/null) || true
  [ -n "${uri:-}" ] || fail "no '$codename main' archive in /etc/apt/sources.list.d/*.sources"
}

debian_apt_private() {
  local tmp=$1 type=$2 suite=$3
  mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial" "$tmp/dl"
  {
    echo "Types: $type"
    echo "URIs: $uri"
    echo "Suites: $suite"
    echo "Components: main"
    [ "$keyring" = "-" ] || echo "Signed-By: $keyring"
  } >"$tmp/sources.sources"
  if [ "$(id -u)" = 0 ] && id _apt >/dev/null 2>&1; then
    chown _apt "$tmp/dl"
  fi
  apt_opts=(
    -o "Dir::Etc::sourcelist=$tmp/sources.sources" -o Dir::Etc::sourceparts=-
    -o "Dir::State::Lists=$tmp/lists" -o "Dir::Cache=$tmp/cache"
    -o Acquire::Retries=1 -o Acquire::http::Timeout=30 -o Acquire::https::Timeout=30
  )
}
