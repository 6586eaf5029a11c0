// clientcheck lists a user's transactions through clients built with
// openapi-fetch on the types openapi-typescript generates from finsync's
// v1 and v2 OpenAPI documents (./v1.ts, ./v2.ts, written by the test), and
// prints what it read: "v2 <id> <amount>" and "v1 <id>" lines, the code of
// a typed error, then the counts. Usage: node client.js SERVER KEY CONNECTION.
import createClient from "openapi-fetch";
import type { paths as V1 } from "./v1.js";
import type { paths as V2 } from "./v2.js";

function args(): { server: string; key: string; connection: string } {
  const [server, key, connection] = process.argv.slice(2);
  if (!server || !key || !connection) {
    throw new Error("usage: node client.js SERVER KEY CONNECTION");
  }
  return { server, key, connection };
}

const { server, key, connection } = args();
const headers = { Authorization: `Bearer ${key}` };

async function listV2(): Promise<number> {
  const client = createClient<V2>({ baseUrl: `${server}/v2`, headers });
  let cursor: string | undefined;
  let n = 0;
  do {
    const { data, error, response } = await client.GET("/transactions", {
      params: { query: { limit: 2, cursor } },
    });
    if (data === undefined) {
      throw new Error(`v2 list transactions: ${response.status}: ${JSON.stringify(error)}`);
    }
    for (const tx of data.transactions) {
      console.log(`v2 ${tx.id} ${tx.amount.toFixed(2)}`);
      n++;
    }
    cursor = data.pageInfo.hasMore ? (data.pageInfo.nextCursor ?? undefined) : undefined;
  } while (cursor !== undefined);

  // An unknown account: the error body is typed by the document.
  const missing = await client.GET("/accounts/{accountId}", {
    params: { path: { accountId: "00000000-0000-4000-8000-000000000000" } },
  });
  const body = missing.error;
  if (body === undefined) {
    throw new Error(`v2 get account: ${missing.response.status}, want an error`);
  }
  const code = typeof body.error === "string" ? body.error : body.error.code;
  console.log(`v2 error ${missing.response.status} ${code}`);
  return n;
}

async function listV1(): Promise<number> {
  const client = createClient<V1>({ baseUrl: `${server}/v1`, headers });
  let cursor: string | undefined;
  let n = 0;
  do {
    const { data, error, response } = await client.GET("/transactions", {
      params: {
        query: { bankConnectionId: connection, startDate: "2026-03-01", endDate: "2026-03-31", limit: 2, cursor },
      },
    });
    if (data === undefined) {
      throw new Error(`v1 list transactions: ${response.status}: ${JSON.stringify(error)}`);
    }
    for (const tx of data.data.transactions) {
      console.log(`v1 ${tx.id}`);
      n++;
    }
    const next = data.meta.nextPage;
    cursor = next === null ? undefined : (new URL(next).searchParams.get("cursor") ?? undefined);
  } while (cursor !== undefined);
  return n;
}

const n2 = await listV2();
const n1 = await listV1();
console.log(`count v2 ${n2} v1 ${n1}`);
