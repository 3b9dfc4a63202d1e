# syntax=docker/dockerfile:1
# Two stages: the build stage has the dev dependencies (TypeScript) and compiles dist/; the final stage
# installs production dependencies only (`npm ci --omit=dev`: its `prepare` skips the build, see
# src/tools/prepare.mjs) and runs as the unprivileged `node` user. Debian (glibc), not Alpine: DuckDB's
# prebuilt binding is built for glibc.

FROM node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY src/tools/prepare.mjs src/tools/prepare.mjs
RUN npm ci --ignore-scripts --no-audit --no-fund
# tsconfig.json compiles src/, test/ and bench/ together.
COPY tsconfig.json ./
COPY schemas schemas
COPY pipelines pipelines
COPY src src
COPY test test
COPY bench bench
RUN npm run build

FROM node:22-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
COPY src/tools/prepare.mjs src/tools/prepare.mjs
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist dist
COPY schemas schemas
COPY pipelines pipelines
# The pages behind each problem `type` (/problems/<code>) are rendered from it at start-up.
COPY docs/errors.md docs/errors.md
RUN mkdir -p /data && chown node:node /data
USER node
# Everything the service writes lives under /data (the embedded log, the org databases, trigger files).
ENV HOST=0.0.0.0 PORT=8080 DATA_DIR=/data QUERIES_DIR=/data/queries
VOLUME /data
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# SIGTERM: stop taking requests, flush appends, finish the compaction batch, close DuckDB (src/server.ts).
STOPSIGNAL SIGTERM
CMD ["node", "--max-semi-space-size=64", "dist/src/server.js"]
