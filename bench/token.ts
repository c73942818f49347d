/**
 * An access token for the benchmark's super admin, obtained over HTTP like any client would.
 * Returns undefined while the server has no authentication.
 */
export async function benchToken(_baseUrl: string): Promise<string | undefined> {
  return undefined;
}
