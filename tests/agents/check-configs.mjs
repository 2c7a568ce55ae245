// The configurations `zblade mcp install` and `zblade hooks install` write for Gemini CLI and
// Qwen Code, loaded by those agents' own settings loaders (from their npm packages, pinned in
// package.json): zblade's MCP server and hooks must come out of the agent's merged settings
// with no error, and a hook run with the agent's own event shape must answer in the format the
// agent reads (Gemini CLI: JSON only on stdout).
//
// ZBLADE=path/to/zblade ZBLADE_AGENT_CLIENTS=folder-with-node_modules node tests/agents/check-configs.mjs

import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const zblade = process.env.ZBLADE;
const clients = process.env.ZBLADE_AGENT_CLIENTS;
assert.ok(zblade && clients, 'set ZBLADE and ZBLADE_AGENT_CLIENTS');

const agents = [
  {
    name: 'gemini-cli',
    settings: '.gemini/settings.json',
    chunks: path.join(clients, 'node_modules/@google/gemini-cli/bundle'),
    events: { prompt: 'BeforeAgent', stop: 'AfterAgent', tool: 'AfterTool' },
    timeoutScale: 1000,
  },
  {
    name: 'qwen-code',
    settings: '.qwen/settings.json',
    chunks: path.join(clients, 'node_modules/@qwen-code/qwen-code/chunks'),
    events: { prompt: 'UserPromptSubmit', stop: 'Stop', tool: 'PostToolUse' },
    timeoutScale: 1,
  },
];

/** The bundle file that exports the agent's `loadSettings`. */
function loaderFile(dir) {
  for (const name of fs.readdirSync(dir).sort()) {
    if (!name.endsWith('.js')) continue;
    const text = fs.readFileSync(path.join(dir, name), 'utf8');
    if (text.includes('function loadSettings(') && /loadSettings[,\s}]/.test(text.slice(-20000))) {
      return path.join(dir, name);
    }
  }
  throw new Error(`no loadSettings in ${dir}`);
}

/** The agent's merged settings for `project`, as its loader makes them under `home`. */
function loadWithAgent(agent, home, project) {
  const file = loaderFile(agent.chunks);
  const script = `
    const m = await import(${JSON.stringify(file)});
    const s = m.loadSettings(${JSON.stringify(project)});
    process.stdout.write(JSON.stringify({ errors: s.errors ?? [], merged: s.merged }));`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    env: { ...process.env, HOME: home },
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  return JSON.parse(out);
}

function run(args, home, cwd, input) {
  const result = spawnSync(zblade, args, { cwd, input, env: { ...process.env, HOME: home }, encoding: 'utf8' });
  assert.equal(result.status, 0, `zblade ${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
}

for (const agent of agents) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), `zblade-${agent.name}-home-`));
  const project = fs.mkdtempSync(path.join(os.tmpdir(), `zblade-${agent.name}-project-`));
  execFileSync('git', ['init', '-q'], { cwd: project });
  run(['init'], home, project);
  // What the user already had there stays.
  const settingsFile = path.join(home, agent.settings);
  fs.mkdirSync(path.dirname(settingsFile), { recursive: true });
  fs.writeFileSync(settingsFile, JSON.stringify({ mcpServers: { other: { command: 'other-server' } } }));
  run(['mcp', 'install', agent.name], home, project);
  run(['hooks', 'install', agent.name], home, project);

  const { errors, merged } = loadWithAgent(agent, home, project);
  assert.deepEqual(errors, [], `${agent.name} refused the settings: ${JSON.stringify(errors)}`);
  assert.equal(merged.mcpServers.other.command, 'other-server');
  assert.equal(merged.mcpServers.zblade.command, fs.realpathSync(zblade));
  assert.equal(merged.mcpServers.zblade.args[0], 'mcp');
  for (const [run_, event] of Object.entries(agent.events)) {
    const groups = merged.hooks?.[event] ?? [];
    const ours = groups.flatMap((g) => g.hooks).filter((h) => h.command.includes(' hook '));
    assert.equal(ours.length, 1, `${agent.name} ${event}: ${JSON.stringify(groups)}`);
    const wanted = run_ === 'tool' ? 'pre-tool' : run_;
    assert.ok(ours[0].command.endsWith(` hook ${wanted} --agent ${agent.name}`), ours[0].command);
    assert.ok(ours[0].timeout >= 5 * agent.timeoutScale, JSON.stringify(ours[0]));
  }

  // Something to remember, then the prompt hook with the agent's own event.
  fs.writeFileSync(
    path.join(project, 'sessions.md'),
    '# Session tokens\n\nWe decided to keep session tokens in Redis, with a one hour expiry, not in JWTs.\n',
  );
  run(['add', 'document', 'sessions.md'], home, project);
  const event = {
    session_id: 's1',
    transcript_path: path.join(home, 'none.json'),
    cwd: project,
    hook_event_name: agent.events.prompt,
    timestamp: new Date().toISOString(),
    prompt: 'where do session tokens live and when do they expire?',
  };
  const hookCommand = merged.hooks[agent.events.prompt].flatMap((g) => g.hooks).find((h) => h.command.includes(' hook '));
  const argv = hookCommand.command.split(' ').slice(1);
  const out = run(argv, home, project, JSON.stringify(event));
  assert.ok(out.includes('Redis'), `${agent.name}: the prompt hook said ${JSON.stringify(out)}`);
  if (agent.name === 'gemini-cli') {
    const answer = JSON.parse(out); // Gemini CLI reads JSON only
    assert.equal(answer.hookSpecificOutput.hookEventName, 'BeforeAgent');
    assert.ok(answer.hookSpecificOutput.additionalContext.includes('Redis'));
  }

  // Taken out again, the user's own entry stays.
  run(['hooks', 'uninstall', agent.name], home, project);
  const after = loadWithAgent(agent, home, project).merged;
  const left = Object.values(after.hooks ?? {}).flat().flatMap((g) => g.hooks ?? []);
  assert.equal(left.filter((h) => h.command.includes(' hook ')).length, 0, JSON.stringify(after.hooks));
  assert.equal(after.mcpServers.other.command, 'other-server');
  console.log(`${agent.name}: zblade's MCP server and hooks load with the agent's own settings loader`);
}
