// Package sim simulates the HTTP APIs of Plaid, GoCardless Bank Account
// Data, Stripe and Mercury on one root, with their real paths, auth schemes,
// field names, pagination and error bodies, so that finsync's adapters can be
// tested (and demonstrated) without reaching a real provider: pointing an
// adapter at a real provider is only a matter of base URL and credentials.
//
// # Layout
//
// One http.Handler serves every provider at its real path: Plaid at the root
// (/accounts/get, /transactions/sync, ...), GoCardless under /api/v2/ (paths
// end in a slash), Stripe under /v1/ and Mercury under /api/v1/. The control
// API lives under /_sim/:
//
//	POST /_sim/advance     {"days": N}
//	POST /_sim/faults      {"provider", "mode", "latencyMs", "institutionId", "path"}
//	POST /_sim/connections {"provider", "credential", "transactions", "historyDays"}
//	GET  /_sim/state
//
// with the Go methods Advance, SetFault, SetConnection and State.
//
// Other simulated services (the destinations finsync delivers to, for
// example) are mounted on the same root through Options.Services, at the
// paths each lists; provider faults leave them alone.
//
// # Data
//
// A connection is identified by its distinguishing credential (Plaid
// access_token, GoCardless requisition_id, Stripe api_key plus "/" and the
// Stripe-Account header when present, Mercury token; see CredentialKey) and
// its data derives from that key and Options.Seed. Transaction i of a
// connection is a pure function of (seed, key, i) and the clock, so a
// history of millions of rows holds no memory and any page costs the same.
//
//   - Plaid: checking, savings and credit card accounts with transactions;
//     a brokerage account with holdings, securities and investment
//     transactions; a student loan and a mortgage; /liabilities/get for the
//     credit card, student loan and mortgage.
//   - GoCardless: a requisition with a current (CACC), a savings (SVGS) and a
//     card (CARD) account. The institution decides which ids booked rows
//     carry: both transactionId and internalTransactionId, only one, or none
//     (and then identical rows can occur on one day).
//   - Stripe: one stream of balance transactions (charges, payments,
//     refunds, payouts, fees, disputes) in minor units; some connections
//     have JPY rows.
//   - Mercury: checking and savings accounts (/accounts) and a credit
//     account (/credit), with transactions carrying mercuryCategory and, for
//     some, categoryData from /categories.
//
// # Clock
//
// The simulator starts at Options.Start (day 0) and moves only through
// Advance. Every advanced day brings new transactions; pending transactions
// post after one to three days (Plaid: the pending id is removed and a
// posted row with a new id carries pending_transaction_id; Stripe: same id,
// pending → available; Mercury: same id, pending → sent with postedAt;
// GoCardless: the pending row vanishes and a booked row appears) and a few
// never post (Plaid removed[], Mercury cancelled). Some posted Plaid rows are
// later modified. A Plaid /transactions/sync loop interrupted by Advance
// answers TRANSACTIONS_SYNC_MUTATION_DURING_PAGINATION.
package sim
