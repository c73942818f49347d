/**
 * A bounded map with no bookkeeping on a read (answer-cache.ts): entries go into the young
 * generation; when it is full (`limit` entries or `byteLimit` bytes of values), it becomes the
 * old one and the former old one is dropped whole. A read found only in the old generation
 * moves the entry to the young one, so what is asked again survives the next turn.
 *
 * Unlike dropping the whole map when full — which answers nothing from memory once a set of
 * questions asked in turn is larger than the map — a set of up to `limit` questions asked in
 * turn stays whole in the young generation, and a larger one (up to twice the limit) is still
 * partly answered from the old one.
 */
export class Generations<V> {
  private young = new Map<string, V>();
  private old = new Map<string, V>();
  private youngBytes = 0;

  constructor(
    private readonly limit: number,
    private readonly byteLimit = Infinity,
    /** The bytes a value counts for `byteLimit`. */
    private readonly bytesOf: (value: V) => number = () => 0,
  ) {}

  get(key: string): V | undefined {
    const value = this.young.get(key);
    if (value !== undefined) return value;
    const older = this.old.get(key);
    if (older !== undefined) {
      this.old.delete(key);
      this.set(key, older);
    }
    return older;
  }

  set(key: string, value: V): void {
    const previous = this.young.get(key);
    if (previous !== undefined) this.youngBytes -= this.bytesOf(previous);
    else if (this.young.size >= this.limit || this.youngBytes >= this.byteLimit) this.turn();
    this.old.delete(key);
    this.young.set(key, value);
    this.youngBytes += this.bytesOf(value);
  }

  delete(key: string): void {
    const value = this.young.get(key);
    if (value !== undefined) {
      this.youngBytes -= this.bytesOf(value);
      this.young.delete(key);
    }
    this.old.delete(key);
  }

  /** Entries held in both generations. */
  get size(): number {
    return this.young.size + this.old.size;
  }

  private turn(): void {
    this.old = this.young;
    this.young = new Map();
    this.youngBytes = 0;
  }
}
