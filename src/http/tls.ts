// HTTPS: tls_cert_file and tls_key_file (PEM), read at start-up and again on SIGHUP (a renewed certificate
// is served to new connections without a restart; a bad pair keeps the one in force).
import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import type { Server } from 'node:https';
import type { Config } from '../config.ts';

export class TlsFileError extends Error {}

export interface TlsPair {
  key: Buffer;
  cert: Buffer;
}

/** Reads and checks the pair (the key must match the certificate); undefined when TLS is not configured. */
export function readTlsPair(config: Pick<Config, 'tls_cert_file' | 'tls_key_file'>): TlsPair | undefined {
  if (!config.tls_cert_file || !config.tls_key_file) return undefined;
  const read = (option: string, file: string): Buffer => {
    try {
      return readFileSync(file);
    } catch (err) {
      throw new TlsFileError(`${option} ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
  };
  const pair = { cert: read('tls_cert_file', config.tls_cert_file), key: read('tls_key_file', config.tls_key_file) };
  try {
    createSecureContext(pair);
  } catch (err) {
    throw new TlsFileError(`tls_cert_file ${config.tls_cert_file} and tls_key_file ${config.tls_key_file} are not a usable pair: ${(err as Error).message}`);
  }
  return pair;
}

/** Re-reads the pair and installs it for new connections. */
export function reloadTls(server: Server, config: Pick<Config, 'tls_cert_file' | 'tls_key_file'>): boolean {
  const pair = readTlsPair(config);
  if (!pair) return false;
  server.setSecureContext(pair);
  return true;
}
