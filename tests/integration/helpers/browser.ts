// A browser as far as a sign-in needs one: a cookie jar, redirects followed by hand (so a test sees
// where the provider sends it), and the provider's sign-in form filled in and posted.
export class Jar {
  private cookies = new Map<string, string>();
  take(res: Response) {
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      const expired = attrs.some((a) => /^\s*expires=Thu, 01 Jan 1970/i.test(a) || /^\s*max-age=0$/i.test(a));
      if (expired || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }
  header() {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

export class Browser {
  readonly jar = new Jar();

  async go(url: string | URL, init: RequestInit = {}): Promise<Response> {
    const res = await fetch(url, {
      ...init,
      redirect: 'manual',
      headers: { ...(init.headers as Record<string, string>), cookie: this.jar.header() },
    });
    this.jar.take(res);
    return res;
  }

  /**
   * Follows redirects until one leaves for `stopAt` (answered, not followed) or a page is shown.
   */
  async follow(res: Response, stopAt: (u: URL) => boolean): Promise<{ res: Response; away?: URL }> {
    let current = res;
    for (let i = 0; i < 10 && current.status >= 300 && current.status < 400; i++) {
      const location = new URL(current.headers.get('location') ?? '', current.url);
      if (stopAt(location)) return { res: current, away: location };
      current = await this.go(location);
    }
    return { res: current };
  }

  /** Posts the page's first form with these fields, then follows the redirects as `follow` does. */
  async submit(page: Response, html: string, fields: Record<string, string>, stopAt: (u: URL) => boolean) {
    const m = html.match(/<form method="post" action="([^"]+)"/);
    if (!m) throw new Error(`no form in page: ${html.slice(0, 200)}`);
    const res = await this.go(new URL(m[1].replace(/&amp;/g, '&'), page.url), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    });
    return this.follow(res, stopAt);
  }
}
