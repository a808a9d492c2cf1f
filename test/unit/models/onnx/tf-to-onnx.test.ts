import { describe, expect, it } from 'vitest';
import { convertTfGraph } from '../../../../src/models/onnx/tf-to-onnx.js';
import type { TfConstant, TfGraph } from '../../../../src/models/onnx/tfjs-graph.js';
import { ort } from '../../../../src/models/onnx/model-host.js';

const io = { producer: 'test', inputs: [{ name: 'x', dims: ['n'] }] };

describe('TF graph → ONNX converter', () => {
  it('refuses an op it has no mapping for, naming it', () => {
    const graph: TfGraph = {
      nodes: [
        { name: 'x', op: 'Placeholder' },
        { name: 'y', op: 'Erfinv', input: ['x'] },
      ],
      constants: new Map(),
    };
    expect(() => convertTfGraph(graph, { ...io, outputs: [{ tensor: 'y', name: 'y', dims: ['n'] }] })).toThrow(
      /Erfinv/,
    );
  });

  it('maps TF semantics ONNX spells differently: Where→NonZero^T, StridedSlice shrink, int32 widened', async () => {
    // x: int32 [n]; out = float(StridedSlice(Where(x > 0), [0,0]:[∞,1], shrink axis 1)) = positions of positives.
    const int32 = (name: string, values: number[], shape = [values.length]): [string, TfConstant] => [
      name,
      { dtype: 'int32', shape, data: Int32Array.from(values) },
    ];
    const graph: TfGraph = {
      nodes: [
        { name: 'x', op: 'Placeholder' },
        { name: 'zero', op: 'Const' },
        { name: 'begin', op: 'Const' },
        { name: 'end', op: 'Const' },
        { name: 'strides', op: 'Const' },
        { name: 'positive', op: 'Greater', input: ['x', 'zero'] },
        { name: 'where', op: 'Where', input: ['positive'] },
        {
          name: 'column',
          op: 'StridedSlice',
          input: ['where', 'begin', 'end', 'strides'],
          attr: { begin_mask: { i: '1' }, end_mask: { i: '1' }, shrink_axis_mask: { i: '2' } },
        },
        { name: 'out', op: 'Cast', input: ['column'], attr: { DstT: { type: 1 } } },
      ],
      constants: new Map([
        int32('zero', [0], []),
        int32('begin', [0, 0]),
        int32('end', [0, 1]),
        int32('strides', [1, 1]),
      ]),
    };
    const bytes = convertTfGraph(graph, { ...io, outputs: [{ tensor: 'out', name: 'out', dims: ['m'] }] });
    const session = await ort.InferenceSession.create(bytes);
    const result = await session.run({ x: new ort.Tensor('int32', Int32Array.from([3, -1, 0, 7, 2]), [5]) });
    expect(Array.from(result.out!.data as Float32Array)).toEqual([0, 3, 4]);
    await session.release();
  });
});
