// Minimal typings for the parts of mvdan-sh (GopherJS build of mvdan/sh) that the allowlist uses.
declare module "mvdan-sh" {
  export interface ShNode {
    [key: string]: unknown;
  }
  export interface ShWord extends ShNode {
    /** The word's text when every part is a plain literal, else "". */
    Lit(): string;
  }
  export interface ShParser {
    Parse(src: string, name: string): ShNode;
  }
  const sh: {
    syntax: {
      NewParser(): ShParser;
      Walk(node: ShNode, visit: (node: ShNode | null) => boolean): void;
      NodeType(node: ShNode): string;
    };
  };
  export default sh;
}
