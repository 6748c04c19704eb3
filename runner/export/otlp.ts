// A run's tape as OpenTelemetry traces with the GenAI semantic conventions, built with the
// official SDK (@opentelemetry/sdk-trace) and serialised by @opentelemetry/otlp-transformer as
// OTLP JSON, or posted by @opentelemetry/exporter-trace-otlp-http. One trace per run:
//   invoke_agent scifi (the run) > iteration N > invoke_agent <role> > chat <model>, execute_tool <tool>
//   and check <id> spans under their iteration. Token usage and cost are attributes; message content
//   (prompts, answers, tool arguments and results) only with `content`. Every string attribute goes
//   through the export guard (paths, secrets, hidden assets) before it is set.
import { createHash } from "node:crypto";
import {
  type Attributes,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { JsonTraceSerializer } from "@opentelemetry/otlp-transformer";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  type IdGenerator,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import type { CallRecord, TapeContentBlock } from "../audit/types.ts";
import type { HistoryRecord } from "../memory/history-events.ts";
import { isCompareStage } from "../sam/check-blocks.ts";
import type { ExportGuard } from "./guard.ts";
import { chatMessages } from "./sft.ts";
import { checksById, type ExportRun } from "./source.ts";
import { readVerified } from "./tape-stream.ts";

type IntegrityRecord = Extract<HistoryRecord, { type: "integrity" }>;

/** What a span needs of a call (the whole request is dropped unless content is exported). */
interface CallFacts {
  seq: number;
  role: string;
  node: string;
  iteration: number | undefined;
  start: number;
  end: number;
  provider: string;
  model: string;
  usage: CallRecord["usage"];
  costUsd: number;
  stopReason: string | undefined;
  error: string | undefined;
  lineHash: string;
  tools: { id: string; name: string; input: Record<string, unknown> }[];
  /** Tool results this call's request carried (answers to the previous call's tool uses). */
  results: Map<string, { content: string; isError: boolean }>;
  input?: string;
  output?: string;
  system?: string;
}

/** Deterministic ids: the same run exports to the same trace and span ids. */
class RunIds implements IdGenerator {
  seed = "";
  #n = 0;
  generateTraceId(): string {
    return this.#hex(32);
  }
  generateSpanId(): string {
    return this.#hex(16);
  }
  #hex(length: number): string {
    return createHash("sha256")
      .update(`${this.seed}\0${this.#n++}`)
      .digest("hex")
      .slice(0, length);
  }
}

export class OtlpBuilder {
  readonly #exporter = new InMemorySpanExporter();
  readonly #ids = new RunIds();
  readonly #provider: TracerProvider;
  readonly #content: boolean;

  constructor(options: { content: boolean; version: string }) {
    this.#content = options.content;
    this.#provider = new TracerProvider({
      resource: resourceFromAttributes({ "service.name": "scifi", "service.version": options.version }),
      idGenerator: this.#ids,
      spanProcessors: [new SimpleSpanProcessor({ exporter: this.#exporter })],
    });
  }

  /** Adds the run's trace (its tape verified as it is read). */
  async addRun(
    run: ExportRun,
    guard: ExportGuard,
    options: { roles?: string[]; key?: Buffer },
  ): Promise<number> {
    const calls: CallFacts[] = [];
    const roles = options.roles ?? [];
    await readVerified(run, {
      ...(options.key ? { key: options.key } : {}),
      onCall: ({ record, lineHash, node }) => {
        if (roles.length > 0 && !roles.includes(record.role)) return;
        calls.push(this.#facts(record, lineHash, node));
      },
    });
    this.#ids.seed = run.runId;
    const tracer = this.#provider.getTracer("scifi-export", "1");
    const s = (text: string, where: string) => guard.text(text, `run ${run.runId} ${where}`);
    const integrity = run.history.filter((e): e is IntegrityRecord => e.type === "integrity");
    // A span event per integrity record; what was attempted is the agent's text: only with --content.
    const integrityEvent = (e: IntegrityRecord): [string, Attributes, number] => [
      "scifi.integrity",
      {
        "scifi.integrity.kind": e.kind,
        "scifi.integrity.role": e.role,
        "scifi.integrity.rule": s(e.rule, `integrity ${e.seq} rule`),
        "scifi.integrity.action": e.action,
        ...(this.#content ? { "scifi.integrity.attempted": s(e.attempted, `integrity ${e.seq}`) } : {}),
      },
      Date.parse(e.time),
    ];
    const times = run.history.map((e) => Date.parse(e.time)).filter((t) => !Number.isNaN(t));
    const runStart = Math.min(...times, ...calls.map((c) => c.start));
    const runEnd = Math.max(...times, ...calls.map((c) => c.end));
    const total = calls.reduce((sum, c) => sum + c.costUsd, 0);
    const root = tracer.startSpan(
      "invoke_agent scifi",
      {
        kind: SpanKind.INTERNAL,
        startTime: runStart,
        attributes: {
          "gen_ai.operation.name": "invoke_agent",
          "gen_ai.agent.name": "scifi",
          "gen_ai.conversation.id": run.runId,
          "scifi.run.id": run.runId,
          "scifi.task": s(run.task, "task"),
          "scifi.verdict": run.verdict,
          "scifi.verdict.reason": s(run.reason, "reason"),
          "scifi.scripted": run.scripted,
          "scifi.cost_usd": total,
          ...(run.trial ? { "scifi.eval.id": run.trial.evalId, "scifi.eval.trial": run.trial.trialId } : {}),
        },
      },
      ROOT_CONTEXT,
    );
    const under = (parent: Span) => trace.setSpan(ROOT_CONTEXT, parent);
    // Iterations (phases) from the history: their start and end events.
    const iterations = new Map<number, Span>();
    for (const event of run.history) {
      if (event.type !== "iteration_start") continue;
      const end = run.history.find((e) => e.type === "iteration_end" && e.iteration === event.iteration);
      const last = Math.max(
        end ? Date.parse(end.time) : Date.parse(event.time),
        ...calls
          .filter((c) => c.iteration === event.iteration && c.role !== "final_review")
          .map((c) => c.end),
      );
      const span = tracer.startSpan(
        `iteration ${event.iteration}`,
        {
          startTime: Date.parse(event.time),
          attributes: { "scifi.phase": "iteration", "scifi.iteration": event.iteration },
        },
        under(root),
      );
      if (end && end.type === "iteration_end" && !end.passed)
        span.setStatus({ code: SpanStatusCode.ERROR, message: s(end.reason ?? "failed", "iteration") });
      iterations.set(event.iteration, span);
      span.end(last);
      // Ended spans are still valid parents: children carry the parent's ids.
    }
    // Agent passes: consecutive calls of one role on one node in one iteration.
    const passes = new Map<string, CallFacts[]>();
    for (const call of calls) {
      const key = `${call.node}/${call.role}/${call.iteration ?? 0}`;
      passes.set(key, [...(passes.get(key) ?? []), call]);
    }
    for (const passCalls of passes.values()) {
      const first = passCalls[0] as CallFacts;
      const parent =
        (first.role !== "final_review" && first.iteration !== undefined && iterations.get(first.iteration)) ||
        root;
      const pass = tracer.startSpan(
        `invoke_agent ${first.role}`,
        {
          startTime: first.start,
          attributes: {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": first.role,
            "gen_ai.conversation.id": run.runId,
            "scifi.node": first.node,
            ...(first.iteration !== undefined ? { "scifi.iteration": first.iteration } : {}),
            "scifi.cost_usd": passCalls.reduce((sum, c) => sum + c.costUsd, 0),
          },
        },
        under(parent),
      );
      for (const [index, call] of passCalls.entries()) {
        const next = passCalls[index + 1];
        const attributes: Attributes = {
          "gen_ai.operation.name": "chat",
          "gen_ai.provider.name": call.provider,
          "gen_ai.request.model": call.model,
          "gen_ai.response.model": call.model,
          "gen_ai.usage.input_tokens": call.usage.input + call.usage.cacheRead + call.usage.cacheWrite,
          "gen_ai.usage.output_tokens": call.usage.output,
          "gen_ai.usage.cache_read.input_tokens": call.usage.cacheRead,
          "gen_ai.usage.cache_creation.input_tokens": call.usage.cacheWrite,
          "scifi.cost_usd": call.costUsd,
          "scifi.tape.seq": call.seq,
          "scifi.tape.line_sha256": call.lineHash,
          ...(call.stopReason ? { "gen_ai.response.finish_reasons": [call.stopReason] } : {}),
          ...(call.input !== undefined
            ? { "gen_ai.input.messages": s(call.input, `call ${call.seq} input`) }
            : {}),
          ...(call.output !== undefined
            ? { "gen_ai.output.messages": s(call.output, `call ${call.seq} output`) }
            : {}),
          ...(call.system !== undefined
            ? { "gen_ai.system_instructions": s(call.system, `call ${call.seq} system`) }
            : {}),
        };
        const chat = tracer.startSpan(
          `chat ${call.model}`,
          { kind: SpanKind.CLIENT, startTime: call.start, attributes },
          under(pass),
        );
        if (call.error)
          chat.setStatus({ code: SpanStatusCode.ERROR, message: s(call.error, `call ${call.seq} error`) });
        chat.end(call.end);
        for (const tool of call.tools) {
          const result = next?.results.get(tool.id);
          const span = tracer.startSpan(
            `execute_tool ${tool.name}`,
            {
              startTime: call.end,
              attributes: {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool.name,
                "gen_ai.tool.call.id": tool.id,
                "gen_ai.tool.type": "function",
                ...(this.#content
                  ? {
                      "gen_ai.tool.call.arguments": s(JSON.stringify(tool.input), `tool ${tool.id}`),
                      ...(result
                        ? { "gen_ai.tool.call.result": s(result.content, `tool ${tool.id} result`) }
                        : {}),
                    }
                  : {}),
              },
            },
            under(pass),
          );
          if (result?.isError)
            span.setStatus({ code: SpanStatusCode.ERROR, message: "the tool returned an error" });
          for (const e of integrity)
            if (e.call?.seq === call.seq && e.call.id === tool.id) span.addEvent(...integrityEvent(e));
          span.end(next ? next.start : call.end);
        }
      }
      pass.end(Math.max(...passCalls.map((c) => c.end)));
    }
    const checks = checksById(run.sam);
    let previous = runStart;
    for (const event of run.history) {
      const at = Date.parse(event.time);
      if (event.type === "check") {
        const check = checks.get(event.check);
        const hidden = check !== undefined && isCompareStage(check);
        const parent = iterations.get(event.iteration) ?? root;
        const span = tracer.startSpan(
          `check ${event.check}`,
          {
            startTime: Math.min(previous, at),
            attributes: {
              "scifi.phase": "checks",
              "scifi.check.id": event.check,
              "scifi.check.passed": event.passed,
              "scifi.check.exit_code": event.exitCode,
              "scifi.check.stage": hidden ? "compare" : "run",
              "scifi.node": event.node,
              ...(this.#content && !hidden && (event.output ?? event.detail)
                ? { "scifi.check.output": s(event.output ?? event.detail ?? "", `check ${event.check}`) }
                : {}),
            },
          },
          under(parent),
        );
        if (!event.passed) span.setStatus({ code: SpanStatusCode.ERROR, message: `exit ${event.exitCode}` });
        span.end(at);
      }
      if (!Number.isNaN(at)) previous = at;
    }
    // What a defence refused, undid or overrode outside a tool call (docs/integrity.md): on the run.
    for (const e of integrity) if (!e.call) root.addEvent(...integrityEvent(e));
    if (run.verdict !== "passed")
      root.setStatus({ code: SpanStatusCode.ERROR, message: s(run.reason, "reason") });
    root.end(runEnd);
    return calls.length;
  }

  #facts(record: CallRecord, lineHash: string, node: string): CallFacts {
    const end = Date.parse(record.time);
    const last = record.request.messages[record.request.messages.length - 1];
    const results = new Map<string, { content: string; isError: boolean }>();
    for (const b of last?.role === "user" ? last.content : [])
      if (b.type === "tool_result")
        results.set(b.toolUseId, { content: b.content, isError: b.isError === true });
    const tools = (record.response?.content ?? [])
      .filter((b): b is Extract<TapeContentBlock, { type: "tool_use" }> => b.type === "tool_use")
      .map((b) => ({ id: b.id, name: b.name, input: b.input }));
    const facts: CallFacts = {
      seq: record.seq,
      role: record.role,
      node,
      iteration: record.iteration,
      start: end - record.latencyMs,
      end,
      provider: record.provider,
      model: record.model,
      usage: record.usage,
      costUsd: record.costUsd,
      stopReason: record.response?.stopReason,
      error: record.error ? `${record.error.name}: ${record.error.message}` : undefined,
      lineHash,
      tools,
      results,
    };
    if (this.#content) {
      const messages = chatMessages(record);
      const answers = record.response ? 1 : 0;
      facts.system = record.request.system;
      facts.input = JSON.stringify(messages.slice(1, messages.length - answers));
      facts.output = JSON.stringify(messages.slice(messages.length - answers));
    }
    return facts;
  }

  /** Every span so far, ended. */
  spans(): ReadableSpan[] {
    return this.#exporter.getFinishedSpans();
  }

  /** The spans as an OTLP/JSON ExportTraceServiceRequest (the bytes a collector reads). */
  json(): Uint8Array {
    const bytes = JsonTraceSerializer.serializeRequest(this.spans());
    if (!bytes) throw new Error("the OTLP serializer returned nothing for these spans");
    return bytes;
  }

  /** Posts the spans to an OTLP/HTTP traces endpoint (e.g. http://collector:4318/v1/traces). */
  async post(url: string, headers: Record<string, string> = {}): Promise<void> {
    const exporter = new OTLPTraceExporter({ url, headers });
    const spans = this.spans();
    await new Promise<void>((resolve, reject) =>
      exporter.export(spans, (result) =>
        result.code === 0
          ? resolve()
          : reject(
              new Error(
                `posting ${spans.length} span(s) to ${url} failed: ${result.error?.message ?? "no reason given"}`,
              ),
            ),
      ),
    );
    await exporter.shutdown();
  }
}
