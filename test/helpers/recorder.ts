/**
 * A model runner for the inference queue's tests: it records each model call's inputs and answers with the inputs
 * doubled, each call taking `delayMs`.
 */
export function recorder(delayMs = 0) {
  const calls: number[][] = [];
  const run = async (inputs: readonly number[]) => {
    calls.push([...inputs]);
    await new Promise((resolve) => setTimeout(resolve, delayMs));
    return inputs.map((n) => n * 2);
  };
  return { calls, run };
}
