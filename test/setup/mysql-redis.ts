process.env.GENSVC_TEST_STORES = 'mysql-redis';
