// A real OpenID Provider for the tests (issue 61): node's `oidc-provider` (a certified
// implementation) on 127.0.0.1:<port>, with two confidential clients and its development
// login (any user name and password), signing ID tokens with the private keys in <keys file>
// (made there, RSA, when the file does not exist; `ES256` as <alg> makes a P-256 key).
// Usage: node oidc_provider.mjs <port> <keys file> <alg> <redirect uri>...
// It prints "ready" once it listens. To rotate keys the tests start it again with another
// keys file.
import fs from 'node:fs';
import crypto from 'node:crypto';
import Provider from 'oidc-provider';

const [port, keysFile, alg, ...redirects] = process.argv.slice(2);
if (!fs.existsSync(keysFile)) {
  const pair = alg === 'ES256'
    ? crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' })
    : crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = pair.privateKey.export({ format: 'jwk' });
  jwk.kid = `${alg.toLowerCase()}-${crypto.randomBytes(4).toString('hex')}`;
  jwk.alg = alg;
  jwk.use = 'sig';
  fs.writeFileSync(keysFile, JSON.stringify({ alg, keys: [jwk] }));
}
const jwks = JSON.parse(fs.readFileSync(keysFile, 'utf8'));
const provider = new Provider(`http://127.0.0.1:${port}`, {
  clients: [{
    client_id: 'grids3-test',
    client_secret: 'grids3-test-secret',
    redirect_uris: redirects,
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_post',
    id_token_signed_response_alg: jwks.alg || 'RS256',
  }, {
    // The console's client: a confidential client authenticating by HTTP Basic (the
    // default of OpenID Connect), as Keycloak's and Dex's clients do.
    client_id: 'grids3-console',
    client_secret: 'grids3-console-secret',
    redirect_uris: redirects,
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
    id_token_signed_response_alg: jwks.alg || 'RS256',
  }],
  jwks: { keys: jwks.keys },
  findAccount: async (ctx, id) => ({
    accountId: id,
    claims: async () => ({ sub: id, email: `${id}@example.test` }),
  }),
  claims: { openid: ['sub'], email: ['email'] },
  features: { devInteractions: { enabled: true } },
  pkce: { required: () => true },
  ttl: { IdToken: 3600, AccessToken: 3600, AuthorizationCode: 600, Interaction: 600, Session: 3600, Grant: 3600 },
});
provider.proxy = false;
provider.listen(Number(port), '127.0.0.1', () => console.log('ready'));
