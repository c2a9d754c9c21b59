#!/usr/bin/env node
// @ts-check
/**
 * `npm run setup`: makes a fresh clone ready to run, so that every category has a model.
 *
 * 1. The local engines npm cannot provide come from Debian: speech recognition (PocketSphinx and
 *    its US English model) and General-MIDI music (fluidsynth and a sound font); and Chromium,
 *    which the dashboard tests drive (browser downloads are not used). Missing packages
 *    are installed with apt-get as root, or with `sudo -n` when passwordless sudo works; otherwise
 *    the exact command is printed, the JS install goes on, and the script exits 1 at the end.
 *    Elsewhere than Debian it says what the packages are for and which engines it cannot find.
 * 2. `npm install` (which builds dist/ through `prepare`).
 *
 * It runs before the dependencies exist: plain Node, nothing but its built-in modules. The
 * decisions are pure functions (exported, tested in test/setup.test.ts); `main` does the I/O.
 */
'use strict';

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

/** The Debian packages of the local engines, and what each one is for. */
const SYSTEM_PACKAGES = /** @type {const} */ ({
  pocketsphinx: 'speech-to-text (local-stt): the PocketSphinx recognizer, pocketsphinx_batch',
  'pocketsphinx-en-us': 'speech-to-text (local-stt): its US English acoustic and language model',
  sox: 'SoX, command-line audio conversion (to prepare recordings; the service does not call it)',
  fluidsynth: 'music (local-music): renders the composed score with General-MIDI instruments',
  'timgm6mb-soundfont': 'music (local-music): the General-MIDI sound font fluidsynth plays',
  chromium: 'the browser the dashboard tests drive (test/dashboard*.test.ts, through playwright-core); the service does not need it',
});

/** @type {string[]} */
const PACKAGE_NAMES = Object.keys(SYSTEM_PACKAGES);

/** The first npm that blocks dependency install scripts not allowed in package.json `allowScripts`. */
const NPM_BLOCKING_SCRIPTS = [11, 19];

/**
 * @typedef {object} SystemFacts
 * @property {boolean} debian    dpkg-query and apt-get are here
 * @property {string[]} missing  on Debian, the packages of PACKAGE_NAMES that are not installed
 * @property {boolean} root      running as root
 * @property {boolean} sudo      `sudo -n true` works (passwordless sudo)
 * @property {string[]} missingEngines  elsewhere, the engines that could not be found
 */

/**
 * @typedef {object} Command
 * @property {string[]} argv
 * @property {Record<string, string>} env  added to the environment
 */

/**
 * @typedef {{ kind: 'ready' }
 *   | { kind: 'install', as: 'root' | 'sudo', missing: string[], commands: Command[] }
 *   | { kind: 'tell', missing: string[], command: string }
 *   | { kind: 'not-debian', missingEngines: string[] }} SystemPlan
 */

/**
 * What to do about the Debian packages.
 * @param {SystemFacts} facts
 * @returns {SystemPlan}
 */
function planSystemPackages(facts) {
  if (!facts.debian) return { kind: 'not-debian', missingEngines: facts.missingEngines };
  if (facts.missing.length === 0) return { kind: 'ready' };
  const missing = PACKAGE_NAMES.filter((name) => facts.missing.includes(name));
  const apt = [
    ['apt-get', 'update', '-qq'],
    ['apt-get', 'install', '-y', '-qq', '--no-install-recommends', ...missing],
  ];
  if (facts.root) {
    return { kind: 'install', as: 'root', missing, commands: apt.map((argv) => ({ argv, env: { DEBIAN_FRONTEND: 'noninteractive' } })) };
  }
  if (facts.sudo) {
    return { kind: 'install', as: 'sudo', missing, commands: apt.map((argv) => ({ argv: ['sudo', '-n', 'DEBIAN_FRONTEND=noninteractive', ...argv], env: {} })) };
  }
  return { kind: 'tell', missing, command: manualCommand(missing) };
}

/**
 * The command a person with root rights runs to install the packages.
 * @param {string[]} missing
 */
function manualCommand(missing) {
  return `sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing.join(' ')}`;
}

/**
 * Environment additions for `npm install`. An npm older than 11.19 runs every dependency's install
 * script whatever `allowScripts` says, and onnxruntime-node's would download a CUDA build from
 * GitHub (failing the install on a closed network): it is told to skip that. Newer npm never runs
 * it (`"onnxruntime-node": false`) and would warn about the unknown setting, so it gets nothing.
 * @param {string | undefined} npmVersion  e.g. "11.19.1"; undefined when unknown
 * @returns {Record<string, string>}
 */
function npmInstallEnv(npmVersion) {
  const match = /^(\d+)\.(\d+)\./.exec(npmVersion ?? '');
  if (match) {
    const [major, minor] = [Number(match[1]), Number(match[2])];
    const [blockingMajor, blockingMinor] = NPM_BLOCKING_SCRIPTS;
    if (major > blockingMajor || (major === blockingMajor && minor >= blockingMinor)) return {};
  }
  return { npm_config_onnxruntime_node_install_cuda: 'skip' };
}

/**
 * The npm version from npm's user agent ("npm/11.19.1 node/v20.20.2 linux x64 …"), set when this
 * runs as an npm script.
 * @param {string | undefined} userAgent
 */
function npmVersionOf(userAgent) {
  return /^npm\/(\d+\.\d+\.\d+)/.exec(userAgent ?? '')?.[1];
}

/**
 * The version of the npm whose CLI script is `npmCli` (`…/npm/bin/npm-cli.js`, npm's
 * `npm_execpath`), from its package.json. More reliable than the user agent, which an outer npm
 * (`npx npm@10 run setup`) passes down unchanged.
 * @param {string | undefined} npmCli
 * @returns {string | undefined}
 */
function npmVersionAt(npmCli) {
  if (!npmCli) return undefined;
  try {
    /** @type {{ name?: unknown, version?: unknown }} */
    const pkg = JSON.parse(fs.readFileSync(path.join(path.dirname(npmCli), '..', 'package.json'), 'utf8'));
    return pkg.name === 'npm' && typeof pkg.version === 'string' ? pkg.version : undefined;
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// I/O

/** @param {string} message */
function say(message) {
  process.stdout.write(`setup: ${message}\n`);
}

/** @param {string} name */
function onPath(name) {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    try {
      fs.accessSync(path.join(dir, name), fs.constants.X_OK);
      return true;
    } catch {
      // not here
    }
  }
  return false;
}

/** @param {string} name */
function dpkgInstalled(name) {
  const result = spawnSync('dpkg-query', ['-W', '-f=${db:Status-Abbrev}', name], { encoding: 'utf8' });
  return result.status === 0 && result.stdout.startsWith('ii');
}

/** What the service looks for, as shared/providers/local/audio-tools.ts does; for systems without dpkg. */
function missingEnginesHere() {
  /** @param {string} p */
  const exists = (p) => fs.existsSync(p);
  /** @param {string} dir */
  const hasSoundfont = (dir) => {
    try {
      return fs.readdirSync(dir).some((name) => name.toLowerCase().endsWith('.sf2'));
    } catch {
      return false;
    }
  };
  const missing = [];
  if (!onPath('pocketsphinx_batch')) missing.push('pocketsphinx_batch (PocketSphinx 0.8/5prealpha) on PATH');
  if (!['/usr/share/pocketsphinx/model/en-us', '/usr/local/share/pocketsphinx/model/en-us'].some((d) => exists(path.join(d, 'en-us', 'mdef')))) {
    missing.push('the PocketSphinx US English model in /usr/share/pocketsphinx/model/en-us');
  }
  if (!onPath('fluidsynth')) missing.push('fluidsynth on PATH');
  if (!['/usr/share/sounds/sf2', '/usr/share/soundfonts'].some(hasSoundfont)) missing.push('a General-MIDI sound font (.sf2) in /usr/share/sounds/sf2');
  if (!onPath('chromium')) missing.push('chromium on PATH (only for the dashboard tests; or set CHROMIUM_PATH)');
  return missing;
}

/** @returns {SystemFacts} */
function gatherFacts() {
  const debian = process.platform === 'linux' && onPath('dpkg-query') && onPath('apt-get');
  const missing = debian ? PACKAGE_NAMES.filter((name) => !dpkgInstalled(name)) : [];
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  const sudo = debian && missing.length > 0 && !root && onPath('sudo') && spawnSync('sudo', ['-n', 'true'], { stdio: 'ignore' }).status === 0;
  return { debian, missing, root, sudo, missingEngines: debian ? [] : missingEnginesHere() };
}

/** @param {string[]} names */
function describe(names) {
  for (const name of names) say(`  ${name}: ${SYSTEM_PACKAGES[/** @type {keyof typeof SYSTEM_PACKAGES} */ (name)]}`);
}

/**
 * Installs or reports the Debian packages; the command still to run, or null.
 * @returns {string | null}
 */
function systemPackages() {
  const plan = planSystemPackages(gatherFacts());
  switch (plan.kind) {
    case 'ready':
      say(`Debian packages present: ${PACKAGE_NAMES.join(', ')}`);
      return null;
    case 'not-debian':
      say('not a Debian system (no dpkg/apt-get): the Debian packages below cannot be installed from here.');
      say('Without their engines the service still runs; speech-to-text (local-stt) is not offered and');
      say('local music uses its built-in synthesizer. On Debian or Ubuntu they are:');
      describe(PACKAGE_NAMES);
      say(plan.missingEngines.length === 0 ? 'every engine they provide was found here.' : `not found here: ${plan.missingEngines.join('; ')}.`);
      return null;
    case 'tell':
      say('these Debian packages are missing, and this is neither root nor passwordless sudo:');
      describe(plan.missing);
      say(`run this, then \`npm run setup\` again:\n\n    ${plan.command}\n`);
      say('going on with the JS install meanwhile.');
      return plan.command;
    case 'install': {
      say(`installing the missing Debian packages${plan.as === 'sudo' ? ' with sudo' : ''}:`);
      describe(plan.missing);
      for (const command of plan.commands) {
        say(`$ ${command.argv.join(' ')}`);
        const [file, ...args] = command.argv;
        const result = spawnSync(/** @type {string} */ (file), args, { stdio: 'inherit', env: { ...process.env, ...command.env } });
        if (result.status !== 0) {
          const manual = manualCommand(plan.missing);
          say(`that failed (${result.error ? result.error.message : `exit ${result.status}`}); run this, then \`npm run setup\` again:\n\n    ${manual}\n`);
          return manual;
        }
      }
      const still = plan.missing.filter((name) => !dpkgInstalled(name));
      if (still.length > 0) {
        const manual = manualCommand(still);
        say(`still not installed: ${still.join(', ')}; run this, then \`npm run setup\` again:\n\n    ${manual}\n`);
        return manual;
      }
      say('Debian packages installed.');
      return null;
    }
  }
}

/** `npm install` with the npm that runs this script; its exit status. */
function npmInstall() {
  const npmCli = process.env.npm_execpath;
  const [file, ...args] = npmCli && /\.c?js$/.test(npmCli) ? [process.execPath, npmCli] : ['npm'];
  const version = npmVersionAt(npmCli) ?? npmVersionOf(process.env.npm_config_user_agent);
  const env = { ...process.env, ...npmInstallEnv(version) };
  say(`npm ${version ?? '(version unknown)'}`);
  say('$ npm install --no-audit --no-fund   (builds dist/; the first time takes a few minutes)');
  const result = spawnSync(/** @type {string} */ (file), [...args, 'install', '--no-audit', '--no-fund'], {
    stdio: 'inherit',
    env,
    cwd: path.join(__dirname, '..'),
    shell: process.platform === 'win32',
  });
  if (result.error) say(`npm install could not start: ${result.error.message}`);
  return result.status ?? 1;
}

function main() {
  const pending = systemPackages();
  const status = npmInstall();
  if (status !== 0) {
    say(`npm install failed (exit ${status}).`);
    process.exit(status);
  }
  if (pending) {
    say(`the JS install is done, but the Debian packages are not: run\n\n    ${pending}\n\nand then \`npm run setup\` again (speech-to-text is not offered until then).`);
    process.exit(1);
  }
  say('ready: `npm start` runs the service, `npm test` the tests.');
}

module.exports = { SYSTEM_PACKAGES, PACKAGE_NAMES, planSystemPackages, manualCommand, npmInstallEnv, npmVersionOf, npmVersionAt };

if (require.main === module) main();
