#!/usr/bin/env bash
# Creates the demo project in DIR (a small git repository with code, two conversations that
# reference it and a moment) unless DIR already holds one. Used by run.sh, demo-cli.sh and the
# app's end-to-end test. Usage: scripts/demo-project.sh DIR ZBLADE_BINARY [--code-only]
# With --code-only, only the git repository with its code is created (demo-cli.sh then shows
# `zblade init` and `zblade add` itself).
set -euo pipefail
demo="$1"
zblade="$2"
code_only="${3:-}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$demo/src"
cd "$demo"
[ -d .zblade ] && exit 0
if [ ! -d .git ]; then
  git init -q
  cat > src/auth.ts <<'TS'
import { sign } from "jsonwebtoken";

export function generateToken(user: User): string {
  return sign({ sub: user.id }, SECRET, { algorithm: "HS256", expiresIn: "15m" });
}

export function refreshCookie(token: string): string {
  return `refresh=${token}; HttpOnly; Secure; SameSite=Strict`;
}

export async function storeRefreshToken(userId: string, token: string) {
  await redis.set(`refresh:${userId}`, token, "EX", 7 * 24 * 3600);
}
TS
  cat > src/cache.ts <<'TS'
import { LRUCache } from "lru-cache";

export const catalogue = new LRUCache<string, Product>({
  max: 10_000,
  ttl: 5 * 60 * 1000,
});
TS
  git add -A && git -c user.name=demo -c user.email=demo@example.com commit -qm "demo project"
fi
[ "$code_only" = "--code-only" ] && exit 0
"$zblade" init >/dev/null
"$zblade" add conversation "$root/examples/conversations/jwt-auth.json" "$root/examples/conversations/cache-eviction.json" >/dev/null
"$zblade" add moment "$root/examples/moments/refresh-token-store.json" >/dev/null
