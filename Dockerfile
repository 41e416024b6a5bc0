# syntax=docker/dockerfile:1
# Build stage: dev dependencies, native better-sqlite3 build, TypeScript compile, the console's assets (esbuild).
FROM node:22-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY console ./console
COPY scripts/build-console.ts ./scripts/
RUN npm run build && npm prune --omit=dev

# Run stage: production dependencies and the compiled service only, as a non-root user.
FROM node:22-slim
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
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:8080/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "dist/main.js"]
