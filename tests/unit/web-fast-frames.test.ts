import { describe, expect, it } from 'vitest';
import { serializeFrame } from '#shared/stomp-codec.ts';
import { deliverMessages, interceptMessages, type RealtimeMessage } from '#web/realtime/fast-frames.ts';

/** One WebSocket message holding these frames, as the browser hands it over (binaryType arraybuffer). */
function wire(...frames: Uint8Array[]): ArrayBuffer {
  const out = new Uint8Array(frames.reduce((n, f) => n + f.length, 0));
  let at = 0;
  for (const f of frames) {
    out.set(f, at);
    at += f.length;
  }
  return out.buffer;
}

const message = (subscription: string, body: Uint8Array | string, extra: Record<string, string> = {}) =>
  serializeFrame({
    command: 'MESSAGE',
    headers: { subscription, 'message-id': '1', destination: '/topic/shell/x', ...extra },
    body,
  });

function router(ids: string[]) {
  const got: Array<{ sub: string; m: RealtimeMessage }> = [];
  const route = (sub: string) =>
    ids.includes(sub) ? (m: RealtimeMessage) => got.push({ sub, m }) : undefined;
  return { got, route };
}

describe('MESSAGE frames decoded beside stompjs', () => {
  it('delivers a routed frame with its headers, bytes and text, the bytes a view of the received buffer', () => {
    const { got, route } = router(['t1']);
    const body = new Uint8Array([0x68, 0x69, 0x0a, 0x00, 0xff]); // a NUL inside: content-length decides
    const data = wire(message('t1', body, { offset: '4096', 'we\\cird': 'a\\nb' }));
    expect(deliverMessages(data, route)).toBe(true);
    expect(got).toHaveLength(1);
    expect(got[0].m.headers.offset).toBe('4096');
    expect(got[0].m.headers['we\\cird']).toBe('a\\nb'); // escapes undone as stompjs does
    expect([...got[0].m.binaryBody]).toEqual([...body]);
    expect(got[0].m.binaryBody.buffer).toBe(data);
    expect(got[0].m.body).toBe(new TextDecoder().decode(body));
  });

  it('delivers several frames of one message in order', () => {
    const { got, route } = router(['t1', 't2']);
    expect(deliverMessages(wire(message('t1', 'a'), message('t2', 'b'), message('t1', 'c')), route)).toBe(
      true,
    );
    expect(got.map((g) => `${g.sub}:${g.m.body}`)).toEqual(['t1:a', 't2:b', 't1:c']);
  });

  it('leaves to stompjs, untouched and whole, whatever it cannot place', () => {
    const { got, route } = router(['t1']);
    const error = serializeFrame({ command: 'ERROR', headers: { message: 'no' }, body: 'x' });
    const cases: unknown[] = [
      wire(message('t9', 'unknown subscription')),
      wire(message('t1', 'first'), error), // one frame it cannot take: none taken
      wire(message('t1', 'first'), message('t9', 'second')),
      new TextDecoder().decode(message('t1', 'text frame')),
      wire(new TextEncoder().encode('MESSAGE\nsubscription:t1\ncontent-length:99\n\nshort\0')),
      wire(new TextEncoder().encode('\n')), // a heart-beat
      wire(error),
    ];
    for (const data of cases) expect(deliverMessages(data, route)).toBe(false);
    expect(got).toHaveLength(0);
  });
});

class FakeSocket extends EventTarget {
  onmessage: ((ev: MessageEvent) => unknown) | null = null;
  receive(data: unknown) {
    this.dispatchEvent(new MessageEvent('message', { data }));
  }
}

describe('the socket stompjs listens to', () => {
  it('takes the frames it can place and hands stompjs the rest, in order', () => {
    const { got, route } = router(['t1']);
    const ws = interceptMessages(new FakeSocket() as unknown as WebSocket, route) as unknown as FakeSocket;
    const order: string[] = [];
    const stomp = (ev: MessageEvent) => {
      order.push(`stomp:${new TextDecoder().decode(new Uint8Array(ev.data as ArrayBuffer)).split('\n')[0]}`);
    };
    ws.onmessage = stomp;
    expect(ws.onmessage).toBe(stomp);
    ws.receive(serializeFrame({ command: 'CONNECTED', headers: { version: '1.2' } }).buffer);
    ws.receive(wire(message('t1', 'fast')));
    ws.receive(wire(message('t7', 'not ours')));
    for (const g of got) order.push(`fast:${g.m.body}`);
    expect(order).toEqual(['stomp:CONNECTED', 'stomp:MESSAGE', 'fast:fast']);
  });

  it('takes nothing once stompjs has stopped listening (a closing socket)', () => {
    const { got, route } = router(['t1']);
    const ws = interceptMessages(new FakeSocket() as unknown as WebSocket, route) as unknown as FakeSocket;
    let stompSaw = 0;
    ws.onmessage = () => {
      stompSaw++;
    };
    ws.receive(wire(message('t1', 'live')));
    ws.onmessage = () => {}; // stompjs: "ignore messages" while it closes the socket
    ws.receive(wire(message('t1', 'after close')));
    expect(got.map((g) => g.m.body)).toEqual(['live']);
    expect(stompSaw).toBe(0);
  });
});
