/** What the bot says about Telegram Stars payments (/buy, the invoices, /paysupport), in both languages. */

export type StarsRefusal = 'invalid_invoice' | 'product_gone' | 'other_account' | 'price_changed' | 'downgrade';

export interface ShopLine {
  name: string;
  tokens: number;
  stars: number;
}

export interface StarsTexts {
  shop(b: { packs: ShopLine[]; plans: ShopLine[] }): string;
  nothingForSale: string;
  packButton(line: ShopLine): string;
  planButton(line: ShopLine): string;
  /** Invoice title (1-32 characters) and description (1-255). */
  packTitle(name: string): string;
  packDescription(tokens: number): string;
  planTitle(plan: string): string;
  planDescription(plan: string, tokens: number): string;
  subscribeOffer(plan: string, stars: number): string;
  subscribeButton(stars: number): string;
  /** Why a pre-checkout query (or a /buy button) is refused; Telegram shows it to the payer. */
  refused: Record<StarsRefusal, string>;
  paidTokens(tokens: number, balance: number): string;
  paidPlan(plan: string, until: string, balance: number, renewal: boolean): string;
  refundedDowngrade(plan: string): string;
  notCredited: string;
  paySupport(contact: string | null): string;
}

const en: StarsTexts = {
  shop: ({ packs, plans }) =>
    [
      ...(packs.length ? ['Token packs (bonus tokens, they never expire):', ...packs.map((p) => `• ${p.name}: ${p.stars} ⭐`), ''] : []),
      ...(plans.length ? ['Plans (a month at a time, renewed every 30 days until you cancel):', ...plans.map((p) => `• ${p.name}, ${p.tokens} tokens a month: ${p.stars} ⭐ a month`), ''] : []),
      'You pay with Telegram Stars. Help with payments and refunds: /paysupport',
    ].join('\n'),
  nothingForSale: 'Nothing is for sale right now.',
  packButton: (p) => `${p.name} · ${p.stars} ⭐`,
  planButton: (p) => `${p.name} · ${p.stars} ⭐/month`,
  packTitle: (name) => name.slice(0, 32),
  packDescription: (tokens) => `${tokens} bonus tokens for your account. Bonus tokens never expire.`,
  planTitle: (plan) => `${plan} plan`.slice(0, 32),
  planDescription: (plan, tokens) => `The ${plan} plan: ${tokens} tokens a month and its limits, renewed every 30 days until you cancel the subscription in Telegram.`,
  subscribeOffer: (plan, stars) => `Subscribe to ${plan} for ${stars} ⭐ a month. You can cancel the subscription in Telegram at any time; the plan then runs to the end of the paid month.`,
  subscribeButton: (stars) => `⭐ Subscribe for ${stars} ⭐`,
  refused: {
    invalid_invoice: 'This invoice is no longer valid. Send /buy for a new one.',
    product_gone: 'This product is no longer sold. Send /buy to see what is.',
    other_account: 'This invoice was made for another account. Send /buy for your own.',
    price_changed: 'The price has changed since this invoice was made. Send /buy for a new one.',
    downgrade: 'You have a higher plan running now; you can buy this one once it ends.',
  },
  paidTokens: (tokens, balance) => `Thank you! ${tokens} bonus tokens added. You now have ${balance} tokens.`,
  paidPlan: (plan, until, balance, renewal) =>
    renewal ? `Your ${plan} subscription is renewed: the plan runs until ${until}. You have ${balance} tokens.` : `Thank you! Your plan is ${plan} until ${until}. You have ${balance} tokens.`,
  refundedDowngrade: (plan) =>
    `Your ${plan} subscription renewed while a higher plan is running, so I gave the Stars back and cancelled that subscription.`,
  notCredited: 'Your payment arrived but I could not credit it. Send /paysupport: you will get your Stars back.',
  paySupport: (contact) =>
    [
      'Help with payments',
      '',
      'Purchases are paid in Telegram Stars. Bonus tokens arrive at once; a plan starts at once and runs a month (a subscription renews every 30 days until you cancel it in Telegram).',
      contact
        ? `If a purchase did not arrive, or you want a refund, write to ${contact} with the date and what you bought.`
        : 'If a purchase did not arrive, or you want a refund, contact the operator of this bot with the date and what you bought.',
      'A refund returns the Stars to you and takes back what they bought: the bonus tokens (those already spent are not charged to you) or the plan time.',
      '/balance shows what you have now.',
    ].join('\n'),
};

const ru: StarsTexts = {
  shop: ({ packs, plans }) =>
    [
      ...(packs.length ? ['Пакеты токенов (бонусные токены, не сгорают):', ...packs.map((p) => `• ${p.name}: ${p.stars} ⭐`), ''] : []),
      ...(plans.length ? ['Тарифы (помесячно, продлеваются каждые 30 дней, пока вы не отмените):', ...plans.map((p) => `• ${p.name}, ${p.tokens} токенов в месяц: ${p.stars} ⭐ в месяц`), ''] : []),
      'Оплата звёздами Telegram. Помощь с оплатой и возвраты: /paysupport',
    ].join('\n'),
  nothingForSale: 'Сейчас ничего не продаётся.',
  packButton: (p) => `${p.name} · ${p.stars} ⭐`,
  planButton: (p) => `${p.name} · ${p.stars} ⭐/мес.`,
  packTitle: (name) => name.slice(0, 32),
  packDescription: (tokens) => `${tokens} бонусных токенов на ваш аккаунт. Бонусные токены не сгорают.`,
  planTitle: (plan) => `Тариф ${plan}`.slice(0, 32),
  planDescription: (plan, tokens) => `Тариф ${plan}: ${tokens} токенов в месяц и его лимиты; продлевается каждые 30 дней, пока вы не отмените подписку в Telegram.`,
  subscribeOffer: (plan, stars) => `Подписка на ${plan} за ${stars} ⭐ в месяц. Отменить её можно в Telegram в любой момент; тариф действует до конца оплаченного месяца.`,
  subscribeButton: (stars) => `⭐ Подписаться за ${stars} ⭐`,
  refused: {
    invalid_invoice: 'Этот счёт больше недействителен. Отправьте /buy, чтобы получить новый.',
    product_gone: 'Этот товар больше не продаётся. Отправьте /buy, чтобы увидеть, что есть.',
    other_account: 'Этот счёт выставлен другому аккаунту. Отправьте /buy, чтобы получить свой.',
    price_changed: 'С тех пор как выставлен счёт, цена изменилась. Отправьте /buy, чтобы получить новый.',
    downgrade: 'Сейчас у вас действует тариф выше; этот можно купить, когда он закончится.',
  },
  paidTokens: (tokens, balance) => `Спасибо! Начислено ${tokens} бонусных токенов. Теперь у вас ${balance} токенов.`,
  paidPlan: (plan, until, balance, renewal) =>
    renewal ? `Подписка на ${plan} продлена: тариф действует до ${until}. У вас ${balance} токенов.` : `Спасибо! Ваш тариф ${plan} до ${until}. У вас ${balance} токенов.`,
  refundedDowngrade: (plan) => `Подписка на ${plan} продлилась, когда у вас действует тариф выше, поэтому я вернул звёзды и отменил эту подписку.`,
  notCredited: 'Оплата пришла, но начислить её не удалось. Отправьте /paysupport: звёзды вам вернут.',
  paySupport: (contact) =>
    [
      'Помощь с оплатой',
      '',
      'Покупки оплачиваются звёздами Telegram. Бонусные токены начисляются сразу; тариф начинается сразу и действует месяц (подписка продлевается каждые 30 дней, пока вы не отмените её в Telegram).',
      contact
        ? `Если покупка не пришла или вы хотите вернуть деньги, напишите ${contact}: дату и что вы купили.`
        : 'Если покупка не пришла или вы хотите вернуть деньги, напишите владельцу этого бота: дату и что вы купили.',
      'Возврат возвращает вам звёзды и забирает то, что на них куплено: бонусные токены (уже потраченные с вас не взыскиваются) или время тарифа.',
      '/balance покажет, что у вас есть сейчас.',
    ].join('\n'),
};

export const STARS_TEXTS = { en, ru } as const;
