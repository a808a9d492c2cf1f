import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { until } from './children.js';

/** One span as an OTLP/HTTP JSON export carried it, flattened: ids in hex, attribute values unwrapped. */
export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** '' for a span with no parent. */
  readonly parentSpanId: string;
  readonly name: string;
  readonly kind: number;
  readonly startNs: bigint;
  readonly endNs: bigint;
  readonly attributes: Record<string, unknown>;
  /** 0 unset, 1 ok, 2 error; the message an error status carries. */
  readonly status: { code: number; message: string };
  /** The resource's `service.name`. */
  readonly service: string;
}

type OtlpValue = { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean };
type OtlpAttribute = { key: string; value: OtlpValue };
type OtlpSpan = {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes?: OtlpAttribute[];
  status?: { code?: number; message?: string };
};
type OtlpExport = {
  resourceSpans: { resource?: { attributes?: OtlpAttribute[] }; scopeSpans: { spans: OtlpSpan[] }[] }[];
};

const unwrap = (value: OtlpValue): unknown =>
  value.stringValue ??
  (value.intValue === undefined ? undefined : Number(value.intValue)) ??
  value.doubleValue ??
  value.boolValue;
const attributesOf = (list: OtlpAttribute[] = []) =>
  Object.fromEntries(list.map(({ key, value }) => [key, unwrap(value)]));

/**
 * An OTLP/HTTP trace receiver for tests (JSON encoding, `POST /v1/traces`) on a free loopback port: what a collector
 * would be told, kept in order of arrival. Anything it cannot read fails the test that waits on it.
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  readonly problems: string[] = [];

  private constructor(
    private readonly server: Server,
    /** `http://127.0.0.1:PORT`: the value of OTEL_EXPORTER_OTLP_ENDPOINT. */
    readonly endpoint: string,
  ) {}

  static async start(): Promise<OtlpReceiver> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    const receiver = new OtlpReceiver(server, `http://127.0.0.1:${port}`);
    server.on('request', (request: IncomingMessage, response: ServerResponse) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        receiver.accept(request.url ?? '', request.headers['content-type'] ?? '', Buffer.concat(chunks));
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    return receiver;
  }

  private accept(path: string, contentType: string, body: Buffer): void {
    if (path !== '/v1/traces' || !contentType.includes('json')) {
      this.problems.push(`${path} (${contentType})`);
      return;
    }
    const exported = JSON.parse(body.toString('utf8')) as OtlpExport;
    for (const { resource, scopeSpans } of exported.resourceSpans) {
      const name = attributesOf(resource?.attributes)['service.name'];
      const service = typeof name === 'string' ? name : '';
      for (const span of scopeSpans.flatMap((scope) => scope.spans)) {
        this.spans.push({
          traceId: span.traceId,
          spanId: span.spanId,
          parentSpanId: span.parentSpanId ?? '',
          name: span.name,
          kind: span.kind,
          startNs: BigInt(span.startTimeUnixNano),
          endNs: BigInt(span.endTimeUnixNano),
          attributes: attributesOf(span.attributes),
          status: { code: span.status?.code ?? 0, message: span.status?.message ?? '' },
          service,
        });
      }
    }
  }

  /** The spans of `traceId`, once `done` holds of them (spans arrive in batches, as the exporter sends them). */
  async trace(traceId: string, done: (spans: ReceivedSpan[]) => boolean): Promise<ReceivedSpan[]> {
    const of = () => this.spans.filter((span) => span.traceId === traceId);
    await until(
      () => this.problems.length > 0 || done(of()),
      () =>
        `trace ${traceId}: ${of()
          .map((span) => span.name)
          .join(', ')}`,
    );
    if (this.problems.length > 0) throw new Error(`not an OTLP/HTTP JSON export: ${this.problems.join('; ')}`);
    return of();
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** The span named `name` among `spans` (the first, in order of arrival); fails when there is none. */
export function spanNamed(spans: readonly ReceivedSpan[], name: string): ReceivedSpan {
  const span = spans.find((candidate) => candidate.name === name);
  if (span === undefined) throw new Error(`no ${name} span among ${spans.map((s) => s.name).join(', ')}`);
  return span;
}

/** Whether `child` lies within `parent` in time and names it as its parent. */
export function nestedIn(child: ReceivedSpan, parent: ReceivedSpan): boolean {
  return child.parentSpanId === parent.spanId && child.startNs >= parent.startNs && child.endNs <= parent.endNs;
}
