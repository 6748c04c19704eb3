// What the providers and the scripted server agree on, kept apart so an adapter need not load the server.

/** Header carrying the agent role; the scripted server picks the reply queue by it. */
export const ROLE_HEADER = "x-scifi-role";
