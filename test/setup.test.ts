/** `npm run setup` (cli/setup.js): what it plans to run for root, sudo, neither, and not Debian. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { manualCommand, npmInstallEnv, npmVersionAt, npmVersionOf, PACKAGE_NAMES, planSystemPackages, SYSTEM_PACKAGES } from '../cli/setup';

const none = { debian: true, missing: [], root: false, sudo: false, missingEngines: [] };

it('declares the Debian packages of the local engines, each with what it is for', () => {
  expect(PACKAGE_NAMES).toEqual(['pocketsphinx', 'pocketsphinx-en-us', 'sox', 'fluidsynth', 'timgm6mb-soundfont', 'chromium']);
  for (const name of PACKAGE_NAMES) expect(SYSTEM_PACKAGES[name as keyof typeof SYSTEM_PACKAGES]).toMatch(/\w/);
});

it('does nothing when every package is installed, whoever runs it', () => {
  expect(planSystemPackages(none)).toEqual({ kind: 'ready' });
  expect(planSystemPackages({ ...none, root: true })).toEqual({ kind: 'ready' });
});

it('as root, installs only the missing packages with apt-get, non-interactively, after an update', () => {
  expect(planSystemPackages({ ...none, root: true, missing: ['fluidsynth', 'pocketsphinx'] })).toEqual({
    kind: 'install',
    as: 'root',
    missing: ['pocketsphinx', 'fluidsynth'],
    commands: [
      { argv: ['apt-get', 'update', '-qq'], env: { DEBIAN_FRONTEND: 'noninteractive' } },
      { argv: ['apt-get', 'install', '-y', '-qq', '--no-install-recommends', 'pocketsphinx', 'fluidsynth'], env: { DEBIAN_FRONTEND: 'noninteractive' } },
    ],
  });
});

it('with passwordless sudo, runs the same through `sudo -n`', () => {
  expect(planSystemPackages({ ...none, sudo: true, missing: [...PACKAGE_NAMES] })).toEqual({
    kind: 'install',
    as: 'sudo',
    missing: PACKAGE_NAMES,
    commands: [
      { argv: ['sudo', '-n', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', 'update', '-qq'], env: {} },
      { argv: ['sudo', '-n', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', 'install', '-y', '-qq', '--no-install-recommends', ...PACKAGE_NAMES], env: {} },
    ],
  });
});

it('otherwise runs nothing and gives the exact command to run', () => {
  const plan = planSystemPackages({ ...none, missing: ['timgm6mb-soundfont', 'sox'] });
  expect(plan).toEqual({
    kind: 'tell',
    missing: ['sox', 'timgm6mb-soundfont'],
    command: 'sudo apt-get update && sudo apt-get install -y --no-install-recommends sox timgm6mb-soundfont',
  });
  expect(manualCommand(['pocketsphinx'])).toBe('sudo apt-get update && sudo apt-get install -y --no-install-recommends pocketsphinx');
});

it('elsewhere than Debian, installs nothing and reports the engines it could not find', () => {
  expect(planSystemPackages({ debian: false, missing: [], root: true, sudo: false, missingEngines: ['fluidsynth on PATH'] })).toEqual({
    kind: 'not-debian',
    missingEngines: ['fluidsynth on PATH'],
  });
});

it("tells onnxruntime-node to skip its CUDA download only on an npm that ignores allowScripts' default", () => {
  const skip = { npm_config_onnxruntime_node_install_cuda: 'skip' };
  expect(npmInstallEnv('10.8.2')).toEqual(skip);
  expect(npmInstallEnv('11.18.0')).toEqual(skip);
  expect(npmInstallEnv(undefined)).toEqual(skip);
  expect(npmInstallEnv('11.19.1')).toEqual({});
  expect(npmInstallEnv('12.0.0')).toEqual({});
  expect(npmVersionOf('npm/11.19.1 node/v20.20.2 linux x64 workspaces/false')).toBe('11.19.1');
  expect(npmVersionOf('yarn/1.22.22 npm/? node/v20.20.2')).toBeUndefined();
  expect(npmVersionOf(undefined)).toBeUndefined();
});

it("reads the npm version from the package.json beside npm's CLI script", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'setup-npm-'));
  try {
    fs.mkdirSync(path.join(dir, 'bin'));
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'npm', version: '10.9.9' }));
    expect(npmVersionAt(path.join(dir, 'bin', 'npm-cli.js'))).toBe('10.9.9');
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'not-npm', version: '1.0.0' }));
    expect(npmVersionAt(path.join(dir, 'bin', 'npm-cli.js'))).toBeUndefined();
    expect(npmVersionAt(path.join(dir, 'nowhere', 'npm-cli.js'))).toBeUndefined();
    expect(npmVersionAt(undefined)).toBeUndefined();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

it('is what `npm run setup` runs, and the onnxruntime setting is not left where npm warns about it', () => {
  const root = path.join(__dirname, '..');
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string>; allowScripts: Record<string, boolean> };
  expect(pkg.scripts.setup).toBe('node cli/setup.js');
  expect(pkg.allowScripts['onnxruntime-node']).toBe(false);
  const npmrc = path.join(root, '.npmrc');
  if (fs.existsSync(npmrc)) expect(fs.readFileSync(npmrc, 'utf8')).not.toMatch(/onnxruntime/);
});
