import { Type, type TSchema } from '@sinclair/typebox';
import { LOG_LEVELS } from '../context.js';
import { OneOf } from './vocabulary.js';

/**
 * The frames a server emits (§4): responses and the two notifications a server sends, alone or as a batch reply
 * (§11). Requests are the client's; `notifications/cancel` is the client's too (§7.14).
 */

/** §4.7 a request id: a string or a number, echoed unchanged. */
const RequestId = Type.Union([Type.String(), Type.Number()]);

/** A member that must not be there (JSON Schema `not: {}` rejects any value). */
const Forbidden = () => Type.Optional(Type.Never());

/** §12.1 the conventional members of `error.data`, all optional. */
export const ErrorData = Type.Object({
  field: Type.Optional(Type.String()),
  option: Type.Optional(Type.String()),
  retryable: Type.Optional(Type.Boolean()),
  retryAfterMs: Type.Optional(Type.Integer({ minimum: 0 })),
  detail: Type.Optional(Type.String()),
});

/**
 * §12 `{code, message, data?}`. The code is any integer: a receiver MUST treat a code it does not know as a generic
 * failure rather than reject the frame (new codes are additive, Appendix A); RpcErrorCode is the closed set this
 * server sends.
 */
export const ErrorObject = Type.Object({
  code: Type.Integer(),
  message: Type.String(),
  data: Type.Optional(ErrorData),
});

/** §4.2 a success: the request's id and an object result; never an `error` beside it. */
export const SuccessResponse = <R extends TSchema>(result: R) =>
  Type.Object({ jsonrpc: Type.Literal('2.0'), id: RequestId, result, error: Forbidden() });

/** §4.3 an error: id null only when no id could be read from the request (§4.7, §11); never a `result` beside it. */
export const ErrorResponse = Type.Object({
  jsonrpc: Type.Literal('2.0'),
  id: Type.Union([RequestId, Type.Null()]),
  error: ErrorObject,
  result: Forbidden(),
});

/**
 * §9 progress for a request that carried `_meta.progressToken` (a string or an integer), echoed in every frame.
 * `progress` is a fraction; `stage`, `message` and `partial` are optional (Appendix D's frames carry no stage).
 */
export const ProgressNotification = Type.Object({
  jsonrpc: Type.Literal('2.0'),
  method: Type.Literal('notifications/progress'),
  params: Type.Object({
    progressToken: Type.Union([Type.String(), Type.Integer()]),
    progress: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
    stage: Type.Optional(Type.String()),
    message: Type.Optional(Type.String()),
    partial: Type.Optional(Type.Object({})),
  }),
  // §4.5: a notification has no id.
  id: Forbidden(),
});

/** §17.1 a log line: a syslog-style level and a message, optionally a logger, data and `_meta`. */
export const LogNotification = Type.Object({
  jsonrpc: Type.Literal('2.0'),
  method: Type.Literal('notifications/log'),
  params: Type.Object({
    level: OneOf(LOG_LEVELS),
    message: Type.String(),
    logger: Type.Optional(Type.String()),
    data: Type.Optional(Type.Object({})),
    _meta: Type.Optional(Type.Object({})),
  }),
  id: Forbidden(),
});

/** One frame a server emits, its result any object (the method's own shape is checked apart: `resultSchemaFor`). */
export const EmittedMessage = Type.Union([
  SuccessResponse(Type.Object({})),
  ErrorResponse,
  ProgressNotification,
  LogNotification,
]);

/** §11 a batch reply is a non-empty array of responses; a lone message otherwise. */
export const EmittedFrame = Type.Union([EmittedMessage, Type.Array(EmittedMessage, { minItems: 1 })]);
