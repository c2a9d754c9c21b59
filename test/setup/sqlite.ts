process.env.GENSVC_TEST_STORES = 'embedded';
