// Fisher's exact test lives in runner/eval/fisher.ts (eval's integrity comparisons use it too; eval
// sits below evolve); evolve's proposals keep importing it from here.
export { type FisherResult, fisherExact } from "../eval/fisher.ts";
