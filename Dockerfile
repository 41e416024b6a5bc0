# syntax=docker/dockerfile:1
# Node 20 (≥ 20.19), the line the tests run on.
# Build stage: dev dependencies, native better-sqlite3 build, TypeScript compile and the console's assets (npm ci's
# prepare step builds dist/).
FROM node:20-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY src ./src
COPY console ./console
RUN npm ci && npm prune --omit=dev

# Run stage: production dependencies and the compiled service only, as a non-root user.
FROM node:20-slim
# Reachable from outside the container, so tokens are required: mount a directory holding tokens.json at /etc/berth
# (README, Access). The directory, not the file, so that replacing the file is seen without a restart.
ENV NODE_ENV=production BERTH_HOST=0.0.0.0 BERTH_PORT=8080 BERTH_DATA_DIR=/data BERTH_AUTH_TOKENS_FILE=/etc/berth/tokens.json
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8080
# Readiness on the configured port (BERTH_PORT / BERTH_CONFIG), checked by node itself: the slim image has no curl.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 CMD ["node", "dist/healthcheck.js"]
CMD ["node", "dist/main.js"]
