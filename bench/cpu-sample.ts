/**
 * CPU use over an interval, for section 7 (scale): the bench's own Node process (`process.cpuUsage`), its
 * child processes (workerd, started by Miniflare; read from /proc/<pid>/stat), the whole machine
 * (/proc/stat: every process of every user, so other work on the shared cores shows) and `os.loadavg()`.
 * Linux only; elsewhere the /proc figures are null.
 */
import { readdirSync, readFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";

/** Linux's USER_HZ: /proc reports CPU time in these ticks (100 on every mainstream kernel build). */
const TICKS_PER_S = 100;

interface Mark {
  at: number;
  node: NodeJS.CpuUsage;
  childTicks: number | null;
  machine: { busy: number; total: number } | null;
}

export interface CpuUse {
  /** The bench's Node process, in % of one core. */
  nodePct: number;
  /** The bench's child processes (workerd), in % of one core; null where /proc is missing. */
  childrenPct: number | null;
  /** Every process on the machine, in % of all its cores together; null where /proc is missing. */
  machinePct: number | null;
  cores: number;
  /** os.loadavg() at the end of the interval. */
  loadavg: number[];
}

function statFields(pid: string): string[] | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces: the fields after it start after the last ')'.
    return text.slice(text.lastIndexOf(")") + 2).split(" ");
  } catch {
    return null;
  }
}

/** utime + stime of every descendant of this process, in ticks. */
function childTicks(): number | null {
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((d) => /^\d+$/.test(d));
  } catch {
    return null;
  }
  const parent = new Map<string, string>();
  const ticks = new Map<string, number>();
  for (const pid of pids) {
    const f = statFields(pid);
    if (!f) continue;
    // After the command: state(0) ppid(1) … utime(11) stime(12).
    parent.set(pid, f[1]!);
    ticks.set(pid, Number(f[11]) + Number(f[12]));
  }
  const self = String(process.pid);
  const isDescendant = (pid: string) => {
    for (let p = parent.get(pid), hops = 0; p && hops < 64; p = parent.get(p), hops++) if (p === self) return true;
    return false;
  };
  let sum = 0;
  for (const [pid, t] of ticks) if (isDescendant(pid)) sum += t;
  return sum;
}

function machineTicks(): { busy: number; total: number } | null {
  try {
    const line = readFileSync("/proc/stat", "utf8").split("\n")[0]!;
    const v = line.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal …: idle + iowait are the idle time.
    const total = v.slice(0, 8).reduce((a, b) => a + b, 0);
    return { busy: total - v[3]! - (v[4] ?? 0), total };
  } catch {
    return null;
  }
}

export function cpuMark(): Mark {
  return { at: performance.now(), node: process.cpuUsage(), childTicks: childTicks(), machine: machineTicks() };
}

/** CPU use between `mark` and now. */
export function cpuSince(mark: Mark): CpuUse {
  const now = cpuMark();
  const wallS = (now.at - mark.at) / 1000;
  const node = process.cpuUsage(mark.node);
  const children =
    now.childTicks !== null && mark.childTicks !== null ? (now.childTicks - mark.childTicks) / TICKS_PER_S : null;
  const machine =
    now.machine && mark.machine
      ? (100 * (now.machine.busy - mark.machine.busy)) / Math.max(1, now.machine.total - mark.machine.total)
      : null;
  return {
    nodePct: (100 * (node.user + node.system)) / 1e6 / wallS,
    childrenPct: children === null ? null : (100 * children) / wallS,
    machinePct: machine,
    cores: cpus().length,
    loadavg: loadavg(),
  };
}
