import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  agentJobArgs,
  type JobSandbox,
  renderAgentJobScript,
  resourceArgs,
  shellQuote,
} from "../../runner/jobs/batch-script.ts";
import { DEFAULT_JOBS_POLICY, jobGrant, jobsPolicySchema, loadJobsPolicy } from "../../runner/jobs/policy.ts";
import { jobNetworkNote, jobSandboxFor } from "../../runner/jobs/run-jobs.ts";
import {
  formatSlurmMemory,
  formatSlurmTime,
  parseSlurmMemory,
  parseSlurmTime,
} from "../../runner/jobs/units.ts";
import { BUILTIN_SITE_POLICY } from "../../runner/policy/site.ts";
import type { SamDocument, SamMetadata } from "../../runner/sam/types.ts";
import { visible } from "../../runner/terminal-text.ts";
import { hostileStrings } from "../text/hostile.ts";
import { samMetadata } from "./fixtures.ts";

describe("SLURM time and memory notation", () => {
  it.each([
    ["30", 1800],
    [45, 2700],
    ["10:30", 630],
    ["1:00:00", 3600],
    ["2-0", 172_800],
    ["1-2:03", 93_780],
    ["1-02:03:04", 93_784],
  ])("parses time %s as %d s", (text, seconds) => expect(parseSlurmTime(text)).toBe(seconds));

  it.each(["", "1h", "1:2:3:4", "-5", "a-1"])("rejects time '%s'", (text) => {
    expect(parseSlurmTime(text)).toBeUndefined();
  });

  it.each([
    [59, "0:00:59"],
    [3600, "1:00:00"],
    [5400.2, "1:30:01"],
    [86_400, "1-00:00:00"],
    [93_784, "1-02:03:04"],
  ])("formats %d s as %s", (seconds, text) => expect(formatSlurmTime(seconds)).toBe(text));

  it.each([
    ["512", 512 * 1024 ** 2],
    ["512M", 512 * 1024 ** 2],
    ["2G", 2 * 1024 ** 3],
    ["1.5G", 1.5 * 1024 ** 3],
    ["64K", 64 * 1024],
    [100, 100 * 1024 ** 2],
  ])("parses memory %s", (text, bytes) => expect(parseSlurmMemory(text)).toBe(bytes));

  it("formats memory as whole G when exact, else MiB rounded up", () => {
    expect(formatSlurmMemory(4 * 1024 ** 3)).toBe("4G");
    expect(formatSlurmMemory(1.5 * 1024 ** 3)).toBe("1536M");
    expect(formatSlurmMemory(1000)).toBe("1M");
  });
});

describe("job grant", () => {
  it("refuses a SAM without jobs: slurm, with the rule and the fix", () => {
    const refusal = jobGrant(samMetadata({ jobs: undefined }), DEFAULT_JOBS_POLICY);
    expect(refusal).toBeInstanceOf(Error);
    expect((refusal as Error).message).toBe(
      "job request refused (jobs-not-granted): asked to use SLURM jobs; the SAM 'demo' does not request them. Add `jobs: slurm` to the SAM's front matter",
    );
  });

  it("caps the SAM's request by the site policy", () => {
    const policy = jobsPolicySchema.parse({
      maxTime: "2h",
      maxGpus: 1,
      maxCpus: 4,
      maxMemory: "8G",
    });
    const grant = jobGrant(
      samMetadata({ walltimeSec: 86_400, gpu: 2, cpus: 16, memoryBytes: 64 * 1024 ** 3 }),
      policy,
    );
    expect(grant).toMatchObject({ timeSec: 7200, gpus: 1, cpus: 4, memoryBytes: 8 * 1024 ** 3 });
  });

  it("refuses when the site disables jobs", () => {
    const policy = jobsPolicySchema.parse({ enabled: false });
    expect((jobGrant(samMetadata({}), policy) as Error).message).toContain("(jobs-disabled-by-site)");
  });

  it("rejects a bad policy value with what is wrong", () => {
    const r = jobsPolicySchema.safeParse({ maxTime: "forever" });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.message).toBe(
      "'forever' is not a duration (e.g. 2h, 90m, 1:30:00, 1-00:00:00)",
    );
    expect(jobsPolicySchema.safeParse({ maxJobs: 3 }).success).toBe(false);
    expect(jobsPolicySchema.parse({ maxTime: "1:30:00", maxMemory: 512 })).toMatchObject({
      maxTimeSec: 5400,
      maxMemoryBytes: 512 * 1024 ** 2,
    });
  });
});

describe("jobs section of the site policy file", () => {
  const dir = mkdtempSync(join(tmpdir(), "scifi-jobs-policy-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("gives the defaults without a file or a jobs section", () => {
    expect(loadJobsPolicy(join(dir, "absent.yaml"))).toEqual(DEFAULT_JOBS_POLICY);
    writeFileSync(join(dir, "other.yaml"), "maxCpus: 4\n");
    expect(loadJobsPolicy(join(dir, "other.yaml"))).toEqual(DEFAULT_JOBS_POLICY);
  });

  it("reads the jobs section, and names the file and key of a bad value", () => {
    const file = join(dir, "site-policy.yaml");
    writeFileSync(
      file,
      "jobs:\n  maxConcurrentJobs: 2\n  maxTime: 30m\n  partition: short\n  sandbox: none\n",
    );
    expect(loadJobsPolicy(file)).toMatchObject({
      maxConcurrentJobs: 2,
      maxTimeSec: 1800,
      partition: "short",
      sandbox: "none",
    });
    writeFileSync(file, "jobs:\n  maxTime: later\n  sandbox: podman\n");
    expect(() => loadJobsPolicy(file)).toThrow(
      `${file}: invalid 'jobs' section:\n  jobs.maxTime: 'later' is not a duration (e.g. 2h, 90m, 1:30:00, 1-00:00:00)\n  jobs.sandbox: must be one of: auto, docker, apptainer, none`,
    );
  });
});

describe("agent job batch script", () => {
  const job = {
    resources: {
      jobName: "scifi-sum",
      timeSec: 600,
      cpus: 2,
      memoryBytes: 1024 ** 3,
      gpus: 1,
      partition: "debug",
    },
    runId: "r1",
    taskDir: "/home/u/tasks/t1",
    stdoutPath: "/home/u/tasks/t1/slurm-out/sum-%j.out",
    stderrPath: "/home/u/tasks/t1/slurm-out/sum-%j.err",
    scriptCopy: "/home/u/runs/r1/jobs/scripts/1-sum.sh",
    scriptName: "sum.sh",
    args: ["10", "it's"],
    sandbox: { engine: "none" } as JobSandbox,
  };

  it("maps resources to exact sbatch options", () => {
    expect(resourceArgs(job.resources)).toEqual([
      "--job-name=scifi-sum",
      "--nodes=1",
      "--ntasks=1",
      "--time=0:10:00",
      "--cpus-per-task=2",
      "--mem=1G",
      "--gres=gpu:1",
      "--partition=debug",
    ]);
    expect(agentJobArgs(job).slice(-5)).toEqual([
      "--chdir=/home/u/tasks/t1",
      "--output=/home/u/tasks/t1/slurm-out/sum-%j.out",
      "--error=/home/u/tasks/t1/slurm-out/sum-%j.err",
      "--export=NONE",
      "--comment=scifi-run:r1",
    ]);
  });

  it("runs the frozen copy with quoted arguments and carries no #SBATCH directive", () => {
    const text = renderAgentJobScript(job);
    expect(text).toContain(
      "cd /home/u/tasks/t1 || exit 97\n# The site policy runs agent jobs without a container (jobs: sandbox: none).\nexec /bin/bash /home/u/runs/r1/jobs/scripts/1-sum.sh 10 'it'\\''s'\n",
    );
    expect(text).not.toMatch(/^#SBATCH/m);
    expect(shellQuote("a b")).toBe("'a b'");
  });

  it("a name with line breaks stays one comment line: the script's lines are those of a plain name", () => {
    const plain = renderAgentJobScript({ ...job, scriptName: "run.sh" }).split("\n");
    for (const name of hostileStrings(200)) {
      const lines = renderAgentJobScript({ ...job, scriptName: `run.sh${name}touch /tmp/pwned` }).split("\n");
      expect(lines.length, JSON.stringify(name)).toBe(plain.length);
      expect(lines[1], JSON.stringify(name)).toBe(
        `# Written by scifi's job broker for run r1: runs the task's ${visible(`run.sh${name}touch /tmp/pwned`)}`,
      );
      expect(lines.slice(2), JSON.stringify(name)).toEqual(plain.slice(2));
    }
  });

  it("runs the script in the task's container when the policy sandboxes jobs", () => {
    const text = renderAgentJobScript({
      ...job,
      sandbox: {
        engine: "docker",
        image: "scifi-sci:local",
        sif: "/sif/scifi-sci_local.sif",
        network: false,
      },
    });
    expect(text).toContain("engine=docker\n");
    expect(text).toContain(
      'docker run --rm --name "$name" --init --network none --cap-drop ALL --security-opt no-new-privileges ' +
        '--user "$user" --cpus 2 --memory 1G --pids-limit 1024 --gpus "\\"device=${CUDA_VISIBLE_DEVICES:?no GPU allocated}\\"" ' +
        "-v /home/u/tasks/t1:/task -v /home/u/runs/r1/jobs/scripts/1-sum.sh:/scifi-job/script.sh:ro -w /task " +
        "scifi-sci:local /bin/bash /scifi-job/script.sh 10 'it'\\''s' &",
    );
    expect(text).toContain(
      "apptainer exec --containall --cleanenv --no-home --writable-tmpfs --net --network none --nv " +
        '--env "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:?no GPU allocated}" ' +
        "--bind /home/u/tasks/t1:/task --bind /home/u/runs/r1/jobs/scripts/1-sum.sh:/scifi-job/script.sh:ro --pwd /task " +
        "/sif/scifi-sci_local.sif /bin/bash /scifi-job/script.sh 10 'it'\\''s' &",
    );
    expect(text).not.toContain("exec /bin/bash");
    // Never uid 0 in a job's container: a root job's Docker container runs as the sandbox user, Apptainer refuses.
    expect(text).toContain('user="$(id -u):$(id -g)"\nif [ "$(id -u)" = 0 ]; then user=65534:65534; fi\n');
    expect(text).toMatch(/if \[ "\$engine" = apptainer \] && \[ "\$\(id -u\)" = 0 \]; then .*exit 97; fi/);
    const dedicated = renderAgentJobScript({
      ...job,
      sandbox: {
        engine: "docker",
        image: "i",
        sif: "/s.sif",
        network: false,
        rootUser: { uid: 10001, gid: 10002 },
      },
    });
    expect(dedicated).toContain("then user=10001:10002; fi");
    // No network: no network of its own is made.
    expect(text).not.toContain("docker network");
  });

  it("gives a Docker job with network a bridge network of its own (never the default bridge), removed at its end", () => {
    const text = renderAgentJobScript({
      ...job,
      sandbox: { engine: "auto", image: "scifi-sci:local", sif: "/s.sif", network: true },
    });
    expect(text).toContain(
      'net=""\nif [ "$engine" = docker ]; then\n  net="$name-net"\n' +
        '  docker network create --driver bridge --label scifi=1 --label scifi.run=r1 --label "scifi.job=${SLURM_JOB_ID:-$$}" ' +
        '-o com.docker.network.bridge.enable_icc=false "$net" >/dev/null || ' +
        '{ echo "scifi: cannot create this job\'s own network $net" >&2; exit 97; }\n',
    );
    // A holder with the egress filter owns the namespace (the node's addresses read on the node).
    expect(text).toContain(
      'docker run -d --name "$name-net" --init --network "$net" --user 0:0 --cap-drop ALL --cap-add NET_ADMIN',
    );
    expect(text).toContain('-e NODE_ADDRS="$(hostname -I 2>/dev/null)"');
    expect(text).toContain("-j REJECT");
    expect(text).toContain('until docker logs "$name-net" 2>&1 | grep -q "scifi-net filter on"');
    expect(text).toContain(
      'docker run --rm --name "$name" --init --network "container:$name-net" --cap-drop ALL',
    );
    expect(text).not.toContain("--network none --cap-drop");
    // Apptainer with network: none of its own, so no network unless the site gives it the node's.
    expect(text).toContain(
      "apptainer exec --containall --cleanenv --no-home --writable-tmpfs --net --network none --nv",
    );
    const hostNet = renderAgentJobScript({
      ...job,
      sandbox: {
        engine: "auto",
        image: "scifi-sci:local",
        sif: "/s.sif",
        network: true,
        apptainerHostNetwork: true,
      },
    });
    expect(hostNet).toContain("apptainer exec --containall --cleanenv --no-home --writable-tmpfs --nv");
    // Removed after the container, at the end and after scancel (the trap lets the script go on).
    expect(text).toMatch(
      /wait "\$pid" 2>\/dev\/null\nif \[ -n "\$net" \]; then docker rm -f "\$name" "\$name-net" >\/dev\/null 2>&1; docker network rm "\$net" >\/dev\/null 2>&1; fi\nexit "\$status"\n/,
    );
    // The network and its holder first, then the trap and the job's container; the removal last.
    const order = [
      text.indexOf("docker network create"),
      text.indexOf('docker run -d --name "$name-net"'),
      text.indexOf("trap "),
      text.indexOf('docker run --rm --name "$name"'),
      text.lastIndexOf("docker network rm"),
    ];
    expect(order).toEqual([...order].sort((a, b) => a - b));
  });
});

describe("the network of agent jobs", () => {
  const site = { ...BUILTIN_SITE_POLICY, allowNetwork: true };
  const sam = (meta: Partial<SamMetadata>) => ({ metadata: samMetadata(meta) }) as SamDocument;
  it("a host list gives jobs no network, and says so: fetch in the work sandbox, read it from /task", () => {
    const hosts = sam({ networkHosts: ["data.example.org"] });
    const box = jobSandboxFor(hosts, DEFAULT_JOBS_POLICY, site);
    expect(box).toMatchObject({ network: false });
    expect(jobNetworkNote(hosts.metadata, box)).toBe(
      "a job has no network: the task's host list (data.example.org) is reachable only from the work sandbox, through the run's proxy. Fetch the data there, into the task folder, and let the job read it from /task",
    );
  });

  it("network: true gives jobs network of their own; none without it; a site without containers says so", () => {
    const open = sam({ network: true });
    const box = jobSandboxFor(open, DEFAULT_JOBS_POLICY, site);
    expect(box).toMatchObject({ network: true });
    expect(jobNetworkNote(open.metadata, box)).toMatch(
      /^a job has network \(network: true\) with Docker only \(a bridge network of its own.*with Apptainer it has none/,
    );
    expect(jobNetworkNote(sam({}).metadata, jobSandboxFor(sam({}), DEFAULT_JOBS_POLICY, site))).toBe(
      "a job has no network",
    );
    expect(jobNetworkNote(sam({}).metadata, { engine: "none" })).toMatch(/jobs.sandbox: none/);
  });
});
