// Deep freezing of what has been sent to a model. A message that went out in a request is history:
// the audit tape records later requests as references to it ("the first n messages of call k") and
// the provider adapters convert it to wire form once. Both are only sound if the message can never
// change afterwards, so the gateway freezes it, and code that tries to edit sent history fails loudly
// (ES modules are strict: assigning to a frozen object throws) instead of rewriting the record.

/** Objects frozen by freezeDeep, with everything they hold (Object.isFrozen only says one level). */
const deeplyFrozen = new WeakSet<object>();

/** Freezes a value and everything it holds; returns it. Cheap on what is already frozen. */
export function freezeDeep<T>(value: T): T {
  if (typeof value !== "object" || value === null || deeplyFrozen.has(value)) return value;
  for (const member of Object.values(value)) freezeDeep(member);
  Object.freeze(value);
  deeplyFrozen.add(value);
  return value;
}

/** Whether freezeDeep froze this value (so it and all it holds can be trusted by identity). */
export function isFrozenDeep(value: unknown): boolean {
  return typeof value !== "object" || value === null || deeplyFrozen.has(value);
}
