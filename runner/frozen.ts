// Deep freezing of what has been sent to a model. A message that went out in a request is history:
// the audit tape records later requests as references to it ("the first n messages of call k") and
// the provider adapters convert it to wire form once. Both are only sound if the message can never
// change afterwards, so the gateway freezes it, and code that tries to edit sent history fails loudly
// (ES modules are strict: assigning to a frozen object throws) instead of rewriting the record.
//
// A frozen object is taken to be frozen all the way down: freezeDeep freezes the members before the
// object, and nothing in scifi freezes request data only one level deep. (A WeakSet of deeply frozen
// objects would say it exactly, but costs a lookup per object and weak-table work in every GC.)

/** Freezes a value and everything it holds; returns it. Stops at what is already frozen. */
export function freezeDeep<T>(value: T): T {
  if (typeof value !== "object" || value === null || Object.isFrozen(value)) return value;
  for (const member of Object.values(value)) freezeDeep(member);
  return Object.freeze(value);
}

/** Whether the value is frozen (so it and all it holds can be trusted by identity). */
export function isFrozenDeep(value: unknown): boolean {
  return typeof value !== "object" || value === null || Object.isFrozen(value);
}
