// Decodes an OTLP/JSON ExportTraceServiceRequest back into the SDK's ReadableSpan objects, so a test
// can serialise them again with @opentelemetry/otlp-transformer and compare: an export that
// decodes and re-encodes to the same request is OTLP as the official packages write and read it.
import type { Attributes, AttributeValue, HrTime } from "@opentelemetry/api";
import { resourceFromAttributes } from "@opentelemetry/resources";
import type { ReadableSpan } from "@opentelemetry/sdk-trace";

interface AnyValue {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values: AnyValue[] };
}
interface KeyValue {
  key: string;
  value: AnyValue;
}
export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: KeyValue[];
  status: { code: number; message?: string };
  flags: number;
}
export interface OtlpRequest {
  resourceSpans: {
    resource: { attributes: KeyValue[] };
    scopeSpans: { scope: { name: string; version?: string }; spans: OtlpSpan[]; schemaUrl?: string }[];
  }[];
}

function value(v: AnyValue): AttributeValue {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.arrayValue) return v.arrayValue.values.map((x) => value(x)) as AttributeValue;
  throw new Error(`an attribute value of no known type: ${JSON.stringify(v)}`);
}

export function attributes(list: KeyValue[]): Attributes {
  return Object.fromEntries(list.map((kv) => [kv.key, value(kv.value)]));
}

function hrTime(nanos: string): HrTime {
  const n = BigInt(nanos);
  return [Number(n / 1_000_000_000n), Number(n % 1_000_000_000n)];
}

/** Every span of the request, as ReadableSpans. */
export function decodeSpans(request: OtlpRequest): ReadableSpan[] {
  return request.resourceSpans.flatMap((rs) => {
    const resource = resourceFromAttributes(attributes(rs.resource.attributes));
    return rs.scopeSpans.flatMap((ss) =>
      ss.spans.map((s): ReadableSpan => {
        const traceFlags = s.flags & 255;
        const start = hrTime(s.startTimeUnixNano);
        const end = hrTime(s.endTimeUnixNano);
        return {
          name: s.name,
          kind: s.kind - 1,
          spanContext: () => ({ traceId: s.traceId, spanId: s.spanId, traceFlags }),
          ...(s.parentSpanId
            ? { parentSpanContext: { traceId: s.traceId, spanId: s.parentSpanId, traceFlags: 1 } }
            : {}),
          startTime: start,
          endTime: end,
          duration: [end[0] - start[0], end[1] - start[1]],
          status: {
            code: s.status.code,
            ...(s.status.message !== undefined ? { message: s.status.message } : {}),
          },
          attributes: attributes(s.attributes),
          links: [],
          events: [],
          ended: true,
          resource,
          instrumentationScope: {
            name: ss.scope.name,
            ...(ss.scope.version ? { version: ss.scope.version } : {}),
          },
          droppedAttributesCount: 0,
          droppedEventsCount: 0,
          droppedLinksCount: 0,
        };
      }),
    );
  });
}
