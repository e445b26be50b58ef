#!/usr/bin/env bash
# Installs code-server for local boards' code window: npm `code-server@4.99.x` (the last line that runs
# on Node 20) into a directory under /usr, which every local board sees read-only from the host and
# runs from inside its own namespaces (src/server/boards/local/code-server.ts). Idempotent: a marker
# with the version ends it at once when that version is already there. Needs root, Node 20, the npm
# registry and Debian's apt; nothing else from the network.
#
# What it reproduces: code-server's own postinstall.sh (`npm install` in lib/vscode, the node_modules.asar
# and bin/ links, `npm install` in lib/vscode/extensions), with two things it cannot do offline worked
# around: kerberos' prebuild download fails and it builds from source (needs Debian's libkrb5-dev), and
# @vscode/ripgrep's postinstall downloads rg from GitHub unless its bin/ already exists ("bin/ folder
# already exists, exiting" in its lib/postinstall.js), so Debian's rg is put there first.
#
#   scripts/install-code-server.sh            install (or check) under /usr/local/lib/bianbu-code-server
#   BIANBU_CODE_SERVER_DIR=/usr/... ...       somewhere else under /usr
set -euo pipefail

VERSION="${BIANBU_CODE_SERVER_VERSION:-4.99.4}"
DEST="${BIANBU_CODE_SERVER_DIR:-/usr/local/lib/bianbu-code-server}"
MARKER="$DEST/.bianbu-installed"
ENTRY="$DEST/node_modules/code-server/out/node/entry.js"

die() {
  echo "install-code-server: $*" >&2
  exit 1
}

if [ -f "$MARKER" ] && [ "$(cat "$MARKER")" = "$VERSION" ] && [ -f "$ENTRY" ]; then
  echo "install-code-server: code-server $VERSION is installed in $DEST"
  exit 0
fi

start=$(date +%s)
case "$DEST" in
  /usr/*) ;;
  *) die "$DEST is not under /usr: local boards see only the host's /usr" ;;
esac
[ "$(id -u)" = 0 ] || die "run as root (it installs under /usr and may apt-get install ripgrep and libkrb5-dev)"
node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null) || die "node is missing"
[ "$node_major" = 20 ] || die "code-server $VERSION needs Node 20, this host has Node $node_major"
case "$(command -v node)" in
  /usr/*) ;;
  *) die "node ($(command -v node)) is not under /usr: boards could not run it" ;;
esac

need=()
command -v rg >/dev/null 2>&1 || need+=(ripgrep)
[ -e /usr/include/gssapi/gssapi.h ] || need+=(libkrb5-dev)
command -v make >/dev/null 2>&1 || need+=(make)
command -v g++ >/dev/null 2>&1 || need+=(g++)
command -v python3 >/dev/null 2>&1 || need+=(python3)
if [ "${#need[@]}" -gt 0 ]; then
  echo "install-code-server: apt-get install ${need[*]}"
  { DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null; } ||
    die "apt-get install ${need[*]} failed"
fi
rg_bin=$(command -v rg)

# Built beside the destination and renamed into place, so a failed or interrupted run never leaves a
# half-installed tree that the service would try to start.
parent=$(dirname "$DEST")
mkdir -p "$parent"
stage=$(mktemp -d "$DEST.new.XXXXXX")
trap 'rm -rf "$stage"' EXIT
log="$stage.log"
trap 'rm -rf "$stage"; echo "install-code-server: failed; the last lines of $log:" >&2; tail -20 "$log" >&2' ERR

step() {
  echo "install-code-server: $1"
}
export npm_config_yes=true npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false
# node-gyp builds with every core; the headers are the host's (npm's nodedir, or a download from the
# registry's mirror when unset).
export JOBS=max

cd "$stage"
printf '{"name":"bianbu-code-server","private":true}\n' >package.json
step "npm install code-server@$VERSION"
npm install --ignore-scripts --omit=dev "code-server@$VERSION" >>"$log" 2>&1
cs="$stage/node_modules/code-server"
[ -f "$cs/postinstall.sh" ] || die "code-server@$VERSION has no postinstall.sh: check what it does before installing it"

step "lib/vscode: npm install, Debian's rg for @vscode/ripgrep, native modules built"
cd "$cs/lib/vscode"
npm install --ignore-scripts --omit=dev >>"$log" 2>&1
mkdir -p node_modules/@vscode/ripgrep/bin
cp "$rg_bin" node_modules/@vscode/ripgrep/bin/rg
# The top package's one native module (argon2, for password auth) builds beside lib/vscode's.
(cd "$stage" && npm rebuild argon2 >>"$log.argon2" 2>&1) &
argon=$!
npm rebuild >>"$log" 2>&1
wait "$argon" || { cat "$log.argon2" >>"$log"; die "argon2 did not build (see above)"; }
cat "$log.argon2" >>"$log"
rm -f "$log.argon2"
# postinstall.sh's links.
ln -sfn node_modules node_modules.asar
(cd bin/remote-cli && ln -sfn code-linux.sh code-server)
(cd bin/helpers && ln -sfn browser-linux.sh browser.sh)
step "lib/vscode/extensions: npm install"
(cd extensions && npm install --omit=dev >>"$log" 2>&1)

for f in node_modules/node-pty/build/Release/pty.node node_modules/@vscode/spdlog/build/Release/spdlog.node \
  node_modules/@vscode/ripgrep/bin/rg; do
  [ -e "$f" ] || die "lib/vscode/$f is missing after the build (see $log)"
done
# (with a HOME of its own: code-server writes a default config file there)
version=$(HOME="$stage/.check" XDG_CONFIG_HOME="$stage/.check" XDG_DATA_HOME="$stage/.check" \
  node "$cs/out/node/entry.js" --version 2>>"$log" | tail -1) ||
  die "the installed code-server does not start (see $log)"
rm -rf "$stage/.check"
case "$version" in
  "$VERSION "*) ;;
  *) die "the installed code-server says '$version', expected $VERSION" ;;
esac

chmod -R a+rX,go-w "$stage"
printf '%s' "$VERSION" >"$stage/.bianbu-installed"
trap - ERR EXIT
rm -rf "$DEST.old"
[ -e "$DEST" ] && mv "$DEST" "$DEST.old"
mv "$stage" "$DEST"
rm -rf "$DEST.old" "$log"
echo "install-code-server: code-server $VERSION installed in $DEST in $(($(date +%s) - start)) s"
