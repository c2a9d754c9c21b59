/**
 * What the service sells is product data: `product/products.json` (or PRODUCTS_PATH) lists the
 * token packs (bonus tokens) and the paid plans' monthly prices, each priced in Telegram Stars
 * and in a currency for Stripe (an amount in the currency's minor units and its ISO 4217 code).
 * This module validates that file once at boot; nothing else hard-codes a price.
 */
import fs from 'node:fs';
import { z } from 'zod';
import { AppError } from '../errors';
import { PLAN_NAMES, PlanName } from '../plans';

/** An amount in the currency's minor units (cents; a zero-decimal currency such as JPY in units). */
export interface Price {
  amount: number;
  /** ISO 4217, lower case (Stripe's form). */
  currency: string;
}

export interface TokenPack {
  kind: 'token_pack';
  id: string;
  displayName: string;
  /** Bonus tokens it adds (they carry over, unlike the plan's monthly tokens). */
  tokens: number;
  /** Whole Telegram Stars (currency XTR). */
  priceStars: number;
  price: Price;
}

/** A month of a paid plan. */
export interface PlanProduct {
  kind: 'plan';
  id: string;
  plan: PlanName;
  priceStars: number;
  price: Price;
}

export type Product = TokenPack | PlanProduct;

/**
 * Product ids travel in a Telegram invoice payload (1-128 bytes) and in Stripe metadata beside
 * other fields, so they are short and plain.
 */
const ProductId = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,47}$/, 'must be 1-48 characters of a-z, 0-9, _ and -, starting with a letter or digit');
const PriceSchema = z.object({
  amount: z.number().int().positive(),
  currency: z
    .string()
    .regex(/^[A-Za-z]{3}$/, 'must be a three-letter ISO 4217 code')
    .transform((c) => c.toLowerCase()),
});
const PAID_PLANS = PLAN_NAMES.filter((name) => name !== 'free') as [PlanName, ...PlanName[]];

const ProductFileSchema = z
  .object({
    token_packs: z.array(
      z.object({
        id: ProductId,
        display_name: z.string().min(1).max(64),
        tokens: z.number().int().positive().max(100_000_000),
        price_stars: z.number().int().positive(),
        price: PriceSchema,
      }),
    ),
    plans: z
      .array(
        z.object({
          id: ProductId,
          plan: z.enum(PAID_PLANS, { message: `must be a paid plan: ${PAID_PLANS.join(', ')}` }),
          price_stars: z.number().int().positive(),
          price: PriceSchema,
        }),
      )
      .refine((plans) => new Set(plans.map((p) => p.plan)).size === plans.length, { message: 'must price each plan at most once' }),
  })
  .refine((file) => {
    const ids = [...file.token_packs, ...file.plans].map((p) => p.id);
    return new Set(ids).size === ids.length;
  }, { message: 'product ids must be unique across token_packs and plans' });

export class ProductTable {
  private readonly byId: Map<string, Product>;

  constructor(private readonly products: Product[]) {
    this.byId = new Map(products.map((p) => [p.id, p]));
  }

  find(id: string): Product | undefined {
    return this.byId.get(id);
  }

  /** The product, or 404 `not_found` (a product the file no longer lists is not for sale). */
  get(id: string): Product {
    const product = this.byId.get(id);
    if (!product) throw new AppError('not_found', { detail: 'Unknown product' });
    return product;
  }

  tokenPacks(): TokenPack[] {
    return this.products.filter((p): p is TokenPack => p.kind === 'token_pack');
  }

  /** The plan products in the file's order. */
  plans(): PlanProduct[] {
    return this.products.filter((p): p is PlanProduct => p.kind === 'plan');
  }
}

export function parseProducts(raw: unknown, source: string): ProductTable {
  const parsed = ProductFileSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.') || '(file)'}: ${i.message}`).join('; ');
    throw new Error(`Products file ${source} is invalid: ${problems}`);
  }
  return new ProductTable([
    ...parsed.data.token_packs.map(
      (p): TokenPack => ({ kind: 'token_pack', id: p.id, displayName: p.display_name, tokens: p.tokens, priceStars: p.price_stars, price: p.price }),
    ),
    ...parsed.data.plans.map((p): PlanProduct => ({ kind: 'plan', id: p.id, plan: p.plan, priceStars: p.price_stars, price: p.price })),
  ]);
}

export function loadProducts(file: string): ProductTable {
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (error) {
    throw new Error(`Cannot read products file ${file}: ${(error as Error).message}`);
  }
  return parseProducts(raw, file);
}
