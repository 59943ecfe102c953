// `ztc pki create-ca` and `ztc pki verification-cert`: what trying a third-party CA needs, without
// openssl. Local files only (no controller): a CA certificate and key, and the certificate whose
// common name is a CA's verification token, signed by that CA, for `ztc ca verify`.
import { createPrivateKey, createPublicKey, X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { CliError } from '../errors.js';

function read(file: string, what: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new CliError(`cannot read the ${what} ${file}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message}`);
  }
}

function refuseOverwrite(files: string[], force?: boolean) {
  const existing = files.filter((f) => fs.existsSync(f));
  if (existing.length && !force) throw new CliError(`${existing.join(' and ')} already exist${existing.length === 1 ? 's' : ''}: choose another name or --out-dir, or pass --force`);
}

const days = (text: string) => {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > 36500) throw new CliError(`--days: expected a whole number of days (1-36500), got '${text}'`);
  return n;
};

export function addPkiTools(cmd: Command) {
  cmd
    .command('create-ca')
    .description('make a self-signed CA (certificate NAME.pem and key NAME.key, mode 0600) to try third-party CA auth and enrollment')
    .argument('<name>', 'the common name, also the files\' base name')
    .option('--out-dir <dir>', 'where to write the files', '.')
    .option('--days <n>', 'validity', '365')
    .option('--force', 'overwrite existing files')
    .action(async (name: string, opts: { outDir: string; days: string; force?: boolean }) => {
      const base = name.replace(/[^A-Za-z0-9._-]/g, '_');
      const certFile = path.join(opts.outDir, `${base}.pem`);
      const keyFile = path.join(opts.outDir, `${base}.key`);
      const validity = days(opts.days);
      refuseOverwrite([certFile, keyFile], opts.force);
      const { issueCertificate, newRsaKey } = await import('../../model/pki/certs.js');
      const key = newRsaKey(2048);
      const pem = issueCertificate({ commonName: name, organization: name, publicKey: key.publicKey, issuerKeyPem: key.privatePem, days: validity, usage: 'ca' });
      fs.mkdirSync(opts.outDir, { recursive: true });
      fs.writeFileSync(keyFile, key.privatePem, { mode: 0o600 });
      fs.chmodSync(keyFile, 0o600);
      fs.writeFileSync(certFile, pem);
      process.stdout.write(
        `CA '${name}': certificate ${certFile}, key ${keyFile} (0600), valid ${validity} days\n` +
          `next: ztc ca create ${base} --cert-pem @${certFile} --is-auth-enabled --is-auto-ca-enrollment-enabled\n` +
          `      ztc pki verification-cert --ca ${certFile} --token "$(ztc ca get ${base} -o json | jq -r .verificationToken)"\n`,
      );
    });

  cmd
    .command('verification-cert')
    .description('sign a certificate whose common name is a CA\'s verification token with that CA, for `ztc ca verify`')
    .requiredOption('--ca <file>', 'the CA certificate (PEM)')
    .requiredOption('--token <token>', 'the CA\'s verificationToken (ztc ca get NAME -o json)')
    .option('--ca-key <file>', 'the CA\'s private key (PEM; default: the --ca file with .key)')
    .option('--out <file>', 'where to write the certificate', 'verification.pem')
    .option('--force', 'overwrite an existing file')
    .action(async (opts: { ca: string; token: string; caKey?: string; out: string; force?: boolean }) => {
      const keyFile = opts.caKey ?? opts.ca.replace(/\.(pem|crt|cer)$/i, '') + '.key';
      const caPem = read(opts.ca, 'CA certificate');
      const keyPem = read(keyFile, 'CA key');
      let ca: X509Certificate;
      try {
        ca = new X509Certificate(caPem);
      } catch {
        throw new CliError(`${opts.ca} holds no PEM certificate`);
      }
      if (!ca.ca) throw new CliError(`${opts.ca} is not a CA certificate (basicConstraints CA:true is missing)`);
      let key;
      try {
        key = createPrivateKey(keyPem);
      } catch {
        throw new CliError(`${keyFile} holds no PEM private key`);
      }
      const der = (k: ReturnType<typeof createPublicKey>) => k.export({ type: 'spki', format: 'der' }).toString('base64');
      if (der(createPublicKey(key)) !== der(ca.publicKey)) throw new CliError(`${keyFile} is not the key of ${opts.ca}: give the CA's own key with --ca-key`);
      if (key.asymmetricKeyType !== 'rsa') throw new CliError(`the CA key is ${key.asymmetricKeyType?.toUpperCase()}: this command signs with RSA CA keys (those ztc pki create-ca makes); sign with openssl as docs/cli.md's Third-party CAs section shows`);
      if (!/^[A-Za-z0-9._-]{1,64}$/.test(opts.token)) throw new CliError(`--token: '${opts.token}' does not look like a verification token (letters, digits, . _ -)`);
      refuseOverwrite([opts.out], opts.force);
      const { issueCertificate, newRsaKey } = await import('../../model/pki/certs.js');
      const pem = issueCertificate({ commonName: opts.token, publicKey: newRsaKey(2048).publicKey, issuerPem: caPem, issuerKeyPem: keyPem, days: 1, usage: 'client' });
      fs.writeFileSync(opts.out, pem);
      process.stdout.write(`verification certificate for token ${opts.token}, signed by ${ca.subject.replace(/\n/g, ', ')}: ${opts.out}\nnext: ztc ca verify CA-NAME --cert ${opts.out}\n`);
    });
}
