/**
 * An operation's answer given again unchanged (a kept `$lookup`, docs/terminology.md#answer-cache),
 * held as its JSON text: the layers that would otherwise format it as Parameters and serialise
 * it per request (operations/invoke.ts, http/server.ts) pass the text through. Only the text is
 * held — no object graph for the garbage collector to walk, and no shared object a later layer
 * could change: whoever asks for the body (a batch Bundle's entry) gets a fresh copy.
 */
export class PreparedAnswer {
  constructor(
    /** The answer's body as JSON text. */
    readonly json: string,
    /**
     * False for an answer written as text for this request only (a `$lookup` written straight
     * to JSON, src/terminology/operations/lookup-answer.ts): given, never kept by request line.
     */
    readonly reusable = true,
  ) {}

  /** A fresh copy of the body. */
  body(): unknown {
    return JSON.parse(this.json);
  }
}
